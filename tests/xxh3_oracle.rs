//! The compact format's key hash, `xxh3_64` of the `xxhash-rust` crate, against the
//! reference implementation: `XXH3_64bits` of Debian's libxxhash, loaded at run time with
//! `dlopen`. Every expected value is libxxhash's; nothing here is copied from our own output.
//! (The crate is maintained, but the format's bytes depend on its hash being exactly XXH3.)
//!
//! libxxhash is loaded rather than linked so that the crate's other tests build without it;
//! this test fails (it does not skip) when the library is missing, since a skipped oracle
//! proves nothing. `scripts/install-deps` installs it (libxxhash-dev, which pulls
//! libxxhash0; Debian's apt depends on libxxhash0 anyway).
//!
//! `cpp_tests/xxh3_test.cc` checks the same hash from the other side: filters built through
//! the C API answer as libxxhash's hashes and the format's rules predict.

use std::ffi::{CStr, c_void};

use xxhash_rust::xxh3::xxh3_64;

/// `XXH64_hash_t XXH3_64bits(const void* input, size_t length)`.
type Xxh3Fn = unsafe extern "C" fn(*const c_void, usize) -> u64;

fn reference_xxh3() -> Xxh3Fn {
    let names: [&CStr; 2] = [c"libxxhash.so.0", c"libxxhash.so"];
    for name in names {
        // SAFETY: a NUL-terminated name; the library's initialisers are xxHash's (none).
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a live handle and a NUL-terminated symbol name. The handle is never
        // closed: the function stays valid for the whole process.
        let sym = unsafe { libc::dlsym(handle, c"XXH3_64bits".as_ptr()) };
        assert!(!sym.is_null(), "{name:?} has no XXH3_64bits symbol");
        // SAFETY: XXH3_64bits has this signature since XXH3 became stable (xxhash.h 0.8.0,
        // the release whose output this format fixes).
        return unsafe { std::mem::transmute::<*mut c_void, Xxh3Fn>(sym) };
    }
    panic!(
        "libxxhash (libxxhash.so.0) cannot be loaded: it is the oracle of this test; \
         install it with scripts/install-deps (Debian package libxxhash-dev / libxxhash0)"
    );
}

fn reference(f: Xxh3Fn, data: &[u8]) -> u64 {
    // SAFETY: `data` is `data.len()` readable bytes (a dangling but non-NULL pointer when
    // empty, which XXH3 does not read).
    unsafe { f(data.as_ptr().cast(), data.len()) }
}

#[test]
fn xxh3_equals_libxxhash() {
    let f = reference_xxh3();
    let mut rng = fastrand::Rng::with_seed(20250123);
    let mut compared = 0u64;
    let mut check = |data: &[u8], what: &str| {
        let want = reference(f, data);
        let got = xxh3_64(data);
        assert_eq!(
            got,
            want,
            "xxh3_64 of {what} ({} bytes) differs from libxxhash; input {:02x?}",
            data.len(),
            &data[..data.len().min(64)]
        );
        compared += 1;
    };

    let mut buf = vec![0u8; 8 + 5000];
    // Every length 0..=300 (every short path: 0, 1-3, 4-8, 9-16, 17-128, 129-240, and the
    // striped loop past 240), at every alignment of 0..8, 200 random inputs per length.
    for len in 0..=300usize {
        for i in 0..200usize {
            rng.fill(&mut buf[..8 + len]);
            let at = i % 8;
            check(&buf[at..at + len], "random bytes");
        }
        // Uniform bytes, where a wrong lane or tail order cannot hide behind randomness
        // less than anywhere else: zero and 0xff.
        check(&vec![0u8; len], "zero bytes");
        check(&vec![0xffu8; len], "0xff bytes");
    }
    // Longer inputs: random lengths up to 5000, and the sizes around 64-byte stripes and
    // 1024-byte blocks (where the last block is partial or whole).
    for i in 0..500usize {
        let len = rng.usize(301..5001);
        rng.fill(&mut buf[..8 + len]);
        let at = i % 8;
        check(&buf[at..at + len], "random bytes");
    }
    for len in [
        319usize, 320, 321, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 5000,
    ] {
        rng.fill(&mut buf[..len]);
        check(&buf[..len], "random bytes");
    }
    // One large input (many blocks, the whole accumulator path).
    let mut big = vec![0u8; 1 << 20];
    rng.fill(&mut big);
    check(&big, "1 MiB of random bytes");
    check(&big[..(1 << 20) - 1], "1 MiB less one byte of random bytes");
    println!("xxh3_oracle: {compared} hashes equal to libxxhash's XXH3_64bits");
    assert!(compared > 60_000);
}
