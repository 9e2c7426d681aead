//! `leveldb_bloom::xxh64::xxh64` (the compact format's key hash) against the reference
//! implementation: `XXH64` of Debian's libxxhash, loaded at run time with `dlopen`. Every
//! expected value is libxxhash's; nothing here is copied from our own output.
//!
//! libxxhash is loaded rather than linked so that the crate's other tests build without it;
//! this test fails (it does not skip) when the library is missing, since a skipped oracle
//! proves nothing. `scripts/install-deps` installs it (libxxhash-dev, which pulls
//! libxxhash0; Debian's apt depends on libxxhash0 anyway).
//!
//! `cpp_tests/xxh64_test.cc` checks the same hash from the other side: filters built through
//! the C API answer as libxxhash's hashes and the format's rules predict.

use std::ffi::{CStr, c_void};

use leveldb_bloom::xxh64::xxh64;

/// `XXH64_hash_t XXH64(const void* input, size_t length, XXH64_hash_t seed)`.
type Xxh64Fn = unsafe extern "C" fn(*const c_void, usize, u64) -> u64;

fn reference_xxh64() -> Xxh64Fn {
    let names: [&CStr; 2] = [c"libxxhash.so.0", c"libxxhash.so"];
    for name in names {
        // SAFETY: a NUL-terminated name; the library's initialisers are xxHash's (none).
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a live handle and a NUL-terminated symbol name. The handle is never
        // closed: the function stays valid for the whole process.
        let sym = unsafe { libc::dlsym(handle, c"XXH64".as_ptr()) };
        assert!(!sym.is_null(), "{name:?} has no XXH64 symbol");
        // SAFETY: XXH64 has this signature in every xxHash release (xxhash.h, 0.6 to 0.8).
        return unsafe { std::mem::transmute::<*mut c_void, Xxh64Fn>(sym) };
    }
    panic!(
        "libxxhash (libxxhash.so.0) cannot be loaded: it is the oracle of this test; \
         install it with scripts/install-deps (Debian package libxxhash-dev / libxxhash0)"
    );
}

fn reference(f: Xxh64Fn, data: &[u8], seed: u64) -> u64 {
    // SAFETY: `data` is `data.len()` readable bytes (a dangling but non-NULL pointer when
    // empty, which XXH64 does not read).
    unsafe { f(data.as_ptr().cast(), data.len(), seed) }
}

/// splitmix64: fixed-seed inputs, reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }
}

#[test]
fn xxh64_equals_libxxhash() {
    let f = reference_xxh64();
    let mut rng = Rng(20250123);
    let mut compared = 0u64;
    let mut check = |data: &[u8], seed: u64, what: &str| {
        let want = reference(f, data, seed);
        let got = xxh64(data, seed);
        assert_eq!(
            got,
            want,
            "xxh64 of {what} ({} bytes, seed {seed:#x}) differs from libxxhash; input {:02x?}",
            data.len(),
            &data[..data.len().min(64)]
        );
        compared += 1;
    };

    let mut buf = vec![0u8; 8 + 5000];
    // Every length 0..=300, at every alignment of 0..8 (the 8- and 4-byte loads), 200 random
    // inputs per length, seed 0 (the format's) and random seeds.
    for len in 0..=300usize {
        for i in 0..200usize {
            rng.fill(&mut buf[..8 + len]);
            let at = i % 8;
            let seed = if i % 4 == 0 { rng.next() } else { 0 };
            check(&buf[at..at + len], seed, "random bytes");
        }
        // Uniform bytes, where a wrong lane or tail order cannot hide behind randomness
        // less than anywhere else: zero and 0xff.
        check(&vec![0u8; len], 0, "zero bytes");
        check(&vec![0xffu8; len], 0, "0xff bytes");
    }
    // Longer inputs: random lengths up to 5000 and the sizes around 32-byte stripes.
    for i in 0..500usize {
        let len = 301 + (rng.next() % 4700) as usize;
        rng.fill(&mut buf[..8 + len]);
        let at = i % 8;
        check(&buf[at..at + len], 0, "random bytes");
    }
    for len in [1000usize, 1023, 1024, 1025, 4095, 4096, 4097, 5000] {
        rng.fill(&mut buf[..len]);
        check(&buf[..len], 0, "random bytes");
    }
    // One large input (many stripes, the whole accumulator path).
    let mut big = vec![0u8; 1 << 20];
    rng.fill(&mut big);
    check(&big, 0, "1 MiB of random bytes");
    check(&big, u64::MAX, "1 MiB of random bytes");
    println!("xxh64_oracle: {compared} hashes equal to libxxhash's XXH64");
    assert!(compared > 60_000);
}
