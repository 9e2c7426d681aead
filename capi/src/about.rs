//! What the library says about itself: the meaning of a status code, and its version.

use std::ffi::{CStr, c_char, c_int};

use super::boundary::guard;
use super::status::leveldb_bloom_status::{self, *};

/// A static description of a status code (never NULL, never to be freed); an unknown code
/// gets `"unknown status"`.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_status_message(status: c_int) -> *const c_char {
    guard(LEVELDB_BLOOM_ERR_PANIC.message().as_ptr(), || {
        leveldb_bloom_status::try_from(status)
            .map_or(c"unknown status", |s| s.message())
            .as_ptr()
    })
}

/// The library's version, `"MAJOR.MINOR.PATCH"`, equal to `LEVELDB_BLOOM_VERSION` in the
/// header it was built with: compare them to detect a header/library mismatch. Static.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(version) => version,
            Err(_) => panic!("the package version has no NUL"),
        };
    guard(VERSION.as_ptr(), || VERSION.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_own_message() {
        let mut messages: Vec<_> = leveldb_bloom_status::ALL
            .iter()
            .map(|s| s.message())
            .collect();
        messages.sort();
        messages.dedup();
        assert_eq!(messages.len(), leveldb_bloom_status::ALL.len());
        // SAFETY: the function returns a static NUL-terminated string.
        let unknown = unsafe { CStr::from_ptr(leveldb_bloom_status_message(99)) };
        assert_eq!(unknown, c"unknown status");
    }
}
