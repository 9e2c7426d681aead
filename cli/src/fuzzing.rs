//! The entry point for libFuzzer of the table reader (`cpp_tests/fuzz/targets/table_reader.cc`,
//! a C++ harness because LevelDB judges every table the reader finds clean), compiled only
//! with the `fuzzing` feature (`scripts/fuzz` builds it). The MANIFEST reader's target is
//! Rust alone: `cli/fuzz`, cargo-fuzz's layout.

use std::ffi::c_int;

use crate::report::{self, Keys};

/// Reads `len` bytes at `data` as a table file, as `inspect` and `verify` do. Returns 1 if
/// the table reads without a problem (then `*entries` is its entry count), 0 if a problem
/// was found, -1 if its structure cannot be read.
///
/// # Safety
/// `data` points to `len` readable bytes (or is anything when `len` is 0); `entries` is
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_cli_fuzz_table(
    data: *const u8,
    len: usize,
    internal_keys: c_int,
    entries: *mut u64,
) -> c_int {
    let bytes = if len == 0 {
        &[][..]
    } else {
        // SAFETY: the caller passes `len` readable bytes.
        unsafe { std::slice::from_raw_parts(data, len) }
    };
    let keys = if internal_keys != 0 {
        Keys::Internal
    } else {
        Keys::User
    };
    match report::analyze(String::new(), bytes, keys) {
        Err(_) => -1,
        Ok(r) => {
            // SAFETY: the caller passes a writable pointer.
            unsafe { *entries = r.entries };
            c_int::from(r.problems.is_empty())
        }
    }
}
