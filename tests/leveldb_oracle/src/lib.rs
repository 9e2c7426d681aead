//! LevelDB itself as the tests' oracle (test-only, never published): what LevelDB's own
//! `Table` reads in a table file, and tables written by LevelDB's own `TableBuilder`
//! (`src/table_oracle.cc`), for the `leveldb-bloom` command's tests; and, in `tests/`,
//! leveldb-bloom inside real LevelDB databases through LevelDB's C API ([`leveldb_sys`]).

use std::ffi::{CString, c_char};
use std::path::Path;

pub use leveldb_sys as sys;

unsafe extern "C" {
    fn leveldb_bloom_oracle_table_entries(path: *const c_char) -> i64;
    fn leveldb_bloom_oracle_write_table(
        path: *const c_char,
        keys: *const *const c_char,
        lens: *const usize,
        n: usize,
        bits_per_key: i32,
    ) -> i32;
    fn leveldb_bloom_oracle_bloom_filter(
        keys: *const *const c_char,
        lens: *const usize,
        n: usize,
        bits_per_key: i32,
        out: *mut c_char,
        capacity: usize,
    ) -> i64;
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_encoded_bytes()).expect("a path without NUL")
}

/// How many entries LevelDB's `Table` iteration finds in the table file at `path`, or
/// `None` if LevelDB cannot open or iterate it.
pub fn table_entries(path: &Path) -> Option<u64> {
    let path = c_path(path);
    // SAFETY: a NUL-terminated path; the oracle only reads the file.
    let entries = unsafe { leveldb_bloom_oracle_table_entries(path.as_ptr()) };
    u64::try_from(entries).ok()
}

/// Writes a table of `keys` (sorted, as `TableBuilder` requires), each with the value `"v"`,
/// with LevelDB's own `TableBuilder` and Bloom policy at `bits_per_key` (no filter if 0).
pub fn write_table<K: AsRef<[u8]>>(path: &Path, keys: &[K], bits_per_key: i32) -> bool {
    let path = c_path(path);
    let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ref().as_ptr().cast()).collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.as_ref().len()).collect();
    // SAFETY: arrays of `keys.len()` live keys and lengths; a NUL-terminated path.
    let rc = unsafe {
        leveldb_bloom_oracle_write_table(
            path.as_ptr(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            keys.len(),
            bits_per_key,
        )
    };
    rc == 0
}

/// The filter LevelDB's own Bloom policy (`NewBloomFilterPolicy(bits_per_key)`) builds for
/// `keys`.
pub fn bloom_filter<K: AsRef<[u8]>>(keys: &[K], bits_per_key: i32) -> Vec<u8> {
    let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ref().as_ptr().cast()).collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.as_ref().len()).collect();
    // LevelDB's filter: at least 64 bits, at most a byte per bit per key, and its k byte.
    let capacity = 8 + keys.len() * bits_per_key.max(1) as usize + 1;
    let mut out = vec![0u8; capacity];
    // SAFETY: arrays of `keys.len()` live keys and lengths; `out` holds `capacity` bytes.
    let len = unsafe {
        leveldb_bloom_oracle_bloom_filter(
            ptrs.as_ptr(),
            lens.as_ptr(),
            keys.len(),
            bits_per_key,
            out.as_mut_ptr().cast(),
            capacity,
        )
    };
    out.truncate(usize::try_from(len).expect("the filter fits"));
    out
}
