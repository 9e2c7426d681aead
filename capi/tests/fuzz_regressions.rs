//! Regression tests for what the fuzz targets in `cpp_tests/fuzz/` found (cpp_tests/fuzz/README.md, "Findings").
//! Each test names its finding and the fuzz input that reproduces it under
//! `cpp_tests/fuzz/regressions/<target>/`; `scripts/fuzz --ci` replays those inputs too.

use std::ffi::c_int;
use std::os::unix::process::CommandExt;

use leveldb_bloom::{BloomPolicy, Error, FilterBlockBuilder};
use leveldb_bloom_capi::leveldb_bloom_status::*;
use leveldb_bloom_capi::*;

mod common;

// ---------------------------------------------------------------------------------------
// Finding 1 (filter_block_builder, cpp_tests/fuzz/regressions/filter_block_builder/finding-1-huge-offset):
// start_block with an offset whose block would pass 4 GiB (one 4-byte offset per 2 KiB
// window: offsets from 2^41 on) is documented as ERR_TOO_LARGE, but the builder generated
// every empty filter up to it: 4 bytes of memory per 2 KiB of offset (8 GiB for 2^42, and
// for offsets near 2^64 until the allocator failed), then answered OUT_OF_MEMORY with the
// builder changed. Run in a child process limited to 512 MiB of address
// space, so that a regression fails fast instead of taking the machine's memory.
// ---------------------------------------------------------------------------------------

/// The first offset whose window index is 2^30: the offset array alone is then 4 GiB.
const FIRST_OFFSET_PAST_4_GIB: u64 = 2048 << 30;

const CHILD_ENV: &str = "LEVELDB_BLOOM_FUZZ_REGRESSION_CHILD";
const CHILD_ADDRESS_SPACE: u64 = 512 << 20;

/// Runs the ignored test `name` of this test binary in a child process whose address space
/// is limited, and fails with its output if it fails.
fn run_in_memory_limited_child(name: &str) {
    let mut cmd = common::this_test_binary();
    cmd.args([
        name,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, "1");
    // SAFETY: the closure only calls setrlimit, which is async-signal-safe, between fork and
    // exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: CHILD_ADDRESS_SPACE as libc::rlim_t,
                rlim_max: CHILD_ADDRESS_SPACE as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run the child test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} failed in a child limited to {} MiB of address space ({}):\n{stdout}\n{stderr}",
        CHILD_ADDRESS_SPACE >> 20,
        out.status
    );
}

/// Whether this process is the memory-limited child; the child tests do nothing elsewhere
/// (they are also `#[ignore]`d, so that only the parent tests start them).
fn in_child() -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return true;
    }
    eprintln!("skipped: runs only in the memory-limited child its parent test starts");
    false
}

/// A test `$parent` that runs `$body` as the ignored test `$child` in a memory-limited child
/// process (`run_in_memory_limited_child`).
macro_rules! in_memory_limited_child {
    ($parent:ident, $child:ident, $body:block) => {
        #[test]
        fn $parent() {
            if cfg!(miri) {
                // Miri starts no process; it runs the body itself, and an allocation the
                // host cannot make stops it as the limit stops the child.
                $body
            } else {
                run_in_memory_limited_child(stringify!($child));
            }
        }

        #[test]
        #[ignore = "started by its parent test in a memory-limited child"]
        fn $child() {
            if in_child() $body
        }
    };
}

in_memory_limited_child!(
    start_block_past_4_gib_is_too_large_rust_api,
    child_start_block_past_4_gib_rust_api,
    {
        let policy = BloomPolicy::new(10).unwrap();
        for offset in [FIRST_OFFSET_PAST_4_GIB, 1 << 42, 1 << 63, u64::MAX] {
            let mut b = FilterBlockBuilder::new(policy);
            assert_eq!(
                b.start_block(offset),
                Err(Error::TooLarge),
                "start_block({offset})"
            );
            // Nothing changed: still the empty block.
            assert_eq!(
                b.finish().unwrap(),
                &[0, 0, 0, 0, 11][..],
                "after start_block({offset})"
            );
        }
        // With a filter built and keys pending, the refused call changes nothing either.
        let mut reference = FilterBlockBuilder::new(policy);
        let mut b = FilterBlockBuilder::new(policy);
        for builder in [&mut reference, &mut b] {
            builder.start_block(0).unwrap();
            builder.add_key(b"foo").unwrap();
            builder.start_block(5000).unwrap();
            builder.add_key(b"bar").unwrap();
        }
        assert_eq!(b.start_block(u64::MAX), Err(Error::TooLarge));
        assert_eq!(b.finish().unwrap(), reference.finish().unwrap());
    }
);

in_memory_limited_child!(
    start_block_past_4_gib_is_too_large_c_api,
    child_start_block_past_4_gib_c_api,
    {
        let policy = leveldb_bloom_policy_create(10);
        assert!(!policy.is_null());
        for offset in [FIRST_OFFSET_PAST_4_GIB, u64::MAX] {
            // SAFETY: a live policy; the builder is used by this thread only and destroyed once;
            // block and block_len are writable.
            unsafe {
                let b = leveldb_bloom_filter_block_builder_create(policy);
                assert!(!b.is_null());
                assert_eq!(
                    leveldb_bloom_filter_block_builder_start_block(b, offset),
                    LEVELDB_BLOOM_ERR_TOO_LARGE as c_int,
                    "start_block({offset})"
                );
                let (mut block, mut len) = (std::ptr::null(), 0usize);
                assert_eq!(
                    leveldb_bloom_filter_block_builder_finish(b, &mut block, &mut len),
                    LEVELDB_BLOOM_OK as c_int
                );
                assert_eq!(std::slice::from_raw_parts(block, len), &[0, 0, 0, 0, 11]);
                leveldb_bloom_filter_block_builder_destroy(b);
            }
        }
        // SAFETY: created above, destroyed once.
        unsafe { leveldb_bloom_policy_destroy(policy) };
    }
);

// ---------------------------------------------------------------------------------------
// Finding 2 (create_filter, cpp_tests/fuzz/regressions/create_filter/finding-2-filter-len-bits-overflow):
// the filter length is documented as "0 (TooLarge) only if the size overflows size_t", but
// it was computed through the bit count `num_keys * bits_per_key` in u64: when that passed
// 2^64 while the byte count still fit usize, filter_len answered TooLarge / 0.
// ---------------------------------------------------------------------------------------

#[cfg(target_pointer_width = "64")]
#[test]
fn filter_len_fits_usize_although_the_bit_count_passes_u64() {
    use leveldb_bloom::FilterPolicy;

    // (bits per key, keys, expected length): the bit count passes 2^64, the byte count
    // (bits / 8 rounded up, plus the probe byte) does not pass usize::MAX.
    let cases: [(i32, usize, usize); 3] = [
        // 10 * 2^61 bits = 10 * 2^58 bytes.
        (10, 1 << 61, 10 * (1 << 58) + 1),
        // 4 * (2^64 - 1) bits = 2^63 - 0.5 bytes, rounded up to 2^63.
        (4, usize::MAX, (1 << 63) + 1),
        // (2^31 - 1) * 2^36 bits = (2^31 - 1) * 2^33 bytes.
        (i32::MAX, 1 << 36, (i32::MAX as usize) * (1 << 33) + 1),
    ];
    for (bpk, n, want) in cases {
        assert_eq!(
            BloomPolicy::new(bpk).unwrap().filter_len(n),
            Ok(want),
            "filter_len, {bpk} bits per key, {n} keys"
        );
        let p = leveldb_bloom_policy_create(bpk);
        assert!(!p.is_null());
        // SAFETY: a live policy, destroyed once.
        unsafe {
            assert_eq!(
                leveldb_bloom_filter_len(p, n),
                want,
                "leveldb_bloom_filter_len, {bpk} bits per key, {n} keys"
            );
            leveldb_bloom_policy_destroy(p);
        }
    }
    // Still too large: 8 * (2^64 - 1) bits = 2^64 - 1 bytes, plus the probe byte.
    assert_eq!(
        BloomPolicy::new(8).unwrap().filter_len(usize::MAX),
        Err(Error::TooLarge)
    );
}
