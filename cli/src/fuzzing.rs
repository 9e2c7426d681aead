//! The command's entry points for libFuzzer, compiled only with the `fuzzing` feature
//! (`scripts/fuzz` builds them into the harnesses of `cpp_tests/fuzz/targets`): the table
//! reader (`table_reader.cc`, where LevelDB judges every table the reader finds clean) and
//! the MANIFEST and write-ahead log readers (`manifest_reader.cc`).

use std::ffi::c_int;

use crate::failure::Kind;
use crate::manifest::live_tables;
use crate::report::{self, Keys};
use crate::wal::log_of;

/// The bytes `len` at `data` as a slice.
///
/// # Safety
/// `data` points to `len` readable bytes (or is anything when `len` is 0).
unsafe fn bytes<'a>(data: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `len` readable bytes.
        unsafe { std::slice::from_raw_parts(data, len) }
    }
}

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
    // SAFETY: the caller passes `len` readable bytes.
    let bytes = unsafe { bytes(data, len) };
    let keys = if internal_keys != 0 {
        Keys::Internal
    } else {
        Keys::User
    };
    match report::analyze(String::new(), &bytes, keys) {
        Err(_) => -1,
        Ok(r) => {
            // SAFETY: the caller passes a writable pointer.
            unsafe { *entries = r.entries };
            c_int::from(r.problems.is_empty())
        }
    }
}

/// Reads `len` bytes at `data` as a MANIFEST and as a write-ahead log, as `inspect` and
/// `verify` do. Returns the live tables' count, -1 if the MANIFEST is damaged, -2 if it is
/// readable but not this tool's; `*log_records` is the log's record count and `*log_damaged`
/// 1 if the log is damaged. The harness compares two calls on copies at different places.
///
/// # Safety
/// `data` points to `len` readable bytes (or is anything when `len` is 0); `log_records` and
/// `log_damaged` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_cli_fuzz_manifest(
    data: *const u8,
    len: usize,
    log_records: *mut u64,
    log_damaged: *mut c_int,
) -> i64 {
    // SAFETY: the caller passes `len` readable bytes.
    let bytes = unsafe { bytes(data, len) };
    let log = log_of(String::new(), bytes);
    // SAFETY: the caller passes writable pointers.
    unsafe {
        *log_records = log.records;
        *log_damaged = c_int::from(log.damage.is_some());
    }
    match live_tables(bytes) {
        Ok(tables) => i64::try_from(tables.len()).unwrap_or(i64::MAX),
        Err(e) if e.kind() == Kind::Damaged => -1,
        Err(_) => -2,
    }
}
