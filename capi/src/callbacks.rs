//! The four callbacks LevelDB's `leveldb_filterpolicy_create()` takes, with a
//! `leveldb_bloom_policy*` as their state.

use std::ffi::{c_char, c_int, c_void};

use super::boundary::{FfiResult, KeyArray, guard, try_ref, with_keys};
use super::handle::leveldb_bloom_policy;
use super::policy::{POLICY_NAME, leveldb_bloom_policy_destroy};
use super::query::leveldb_bloom_key_may_match;
use super::status::leveldb_bloom_status::*;
use leveldb_bloom::{FilterPolicy, MATCH_ALL_FILTER};

/// LevelDB's destructor callback: destroys the `leveldb_bloom_policy` passed as state.
/// Called by `leveldb_filterpolicy_destroy`. NULL is a no-op.
///
/// # Safety
/// `state` is NULL or a policy owned by the LevelDB filter policy being destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_cb_destructor(state: *mut c_void) {
    // SAFETY: the caller passes ownership of a policy (or NULL).
    unsafe { leveldb_bloom_policy_destroy(state.cast()) }
}

/// LevelDB's `create_filter` callback: returns the filter for the keys in a buffer from C
/// `malloc` (LevelDB copies it and calls `free`), and its length in `*filter_length`.
///
/// When no filter can be built (NULL state or arrays, `num_keys < 0`, a size overflow,
/// allocation failure, an internal panic) it returns the 2-byte filter `00 00`, which every
/// LevelDB reader answers with "may match": the table stays readable, just unfiltered. It
/// returns NULL only when `filter_length` is NULL or even those 2 bytes cannot be allocated.
///
/// # Safety
/// `state` is NULL or a live policy; non-NULL arrays hold `num_keys` elements and each
/// non-NULL key its length in bytes; `filter_length` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_cb_create_filter(
    state: *mut c_void,
    key_array: *const *const c_char,
    key_length_array: *const usize,
    num_keys: c_int,
    filter_length: *mut usize,
) -> *mut c_char {
    if filter_length.is_null() {
        return std::ptr::null_mut();
    }
    // Only the build is guarded: whatever happens in it, LevelDB gets a length and a filter
    // (an empty one would make LevelDB answer "no match" for every key: data loss).
    let built = guard(Err(LEVELDB_BLOOM_ERR_PANIC), || {
        // SAFETY: forwarded from this function's contract.
        unsafe { malloc_filter(state.cast(), key_array, key_length_array, num_keys) }
    });
    let (filter, len) = built.unwrap_or_else(|_| malloc_copy(&MATCH_ALL_FILTER));
    // SAFETY: checked non-NULL above; the caller guarantees it is writable.
    unsafe { *filter_length = len };
    filter.cast()
}

/// Builds the filter straight into a `malloc`ed buffer.
///
/// # Safety
/// As for `leveldb_bloom_cb_create_filter`.
unsafe fn malloc_filter(
    policy: *const leveldb_bloom_policy,
    keys: *const *const c_char,
    key_lens: *const usize,
    num_keys: c_int,
) -> FfiResult<(*mut u8, usize)> {
    let num_keys = usize::try_from(num_keys).map_err(|_| LEVELDB_BLOOM_ERR_INVALID_ARGUMENT)?;
    // SAFETY: forwarded from this function's contract.
    let (policy, keys) = unsafe { (try_ref(policy)?, KeyArray::split(keys, key_lens, num_keys)?) };
    let len = policy.format.filter_len(num_keys)?;
    // calloc: the bytes must be initialised before they become a slice.
    // SAFETY: calloc has no preconditions; a NULL result is handled.
    let buffer = unsafe { libc::calloc(len, 1) }.cast::<u8>();
    if buffer.is_null() {
        return Err(LEVELDB_BLOOM_ERR_OUT_OF_MEMORY);
    }
    // SAFETY: `buffer` holds `len` zeroed bytes that only this function knows of.
    let filter = unsafe { std::slice::from_raw_parts_mut(buffer, len) };
    if let Err(error) = with_keys!(keys, |keys| policy.create_filter_into(keys, filter)) {
        // SAFETY: `buffer` came from calloc and nothing else refers to it.
        unsafe { libc::free(buffer.cast()) };
        return Err(error.into());
    }
    Ok((buffer, len))
}

/// A `malloc`ed copy of `bytes`, or NULL and length 0.
fn malloc_copy(bytes: &[u8]) -> (*mut u8, usize) {
    // SAFETY: malloc has no preconditions; a NULL result is handled.
    let buffer = unsafe { libc::malloc(bytes.len()) }.cast::<u8>();
    if buffer.is_null() {
        return (buffer, 0);
    }
    // SAFETY: `buffer` has room for `bytes.len()` bytes and cannot overlap `bytes`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer, bytes.len()) };
    (buffer, bytes.len())
}

/// LevelDB's `key_may_match` callback: 1 if `key` may be in `filter`, 0 if it is certainly
/// absent, answered as `leveldb_bloom_key_may_match` answers (for a Bloom policy, exactly
/// as LevelDB's Bloom policy). Anything that cannot be answered (NULL
/// state or filter, a NULL key with a length) answers 1.
///
/// # Safety
/// `state` is NULL or a live policy; non-NULL `key` and `filter` point to `length` and
/// `filter_length` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_cb_key_may_match(
    state: *mut c_void,
    key: *const c_char,
    length: usize,
    filter: *const c_char,
    filter_length: usize,
) -> u8 {
    // SAFETY: forwarded from this function's contract.
    u8::from(unsafe {
        leveldb_bloom_key_may_match(state.cast(), key, length, filter.cast(), filter_length)
    })
}

/// LevelDB's `name` callback: `"leveldb.BuiltinBloomFilter2"`, a static string that stays
/// valid for the life of the process, whatever `state` is.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_cb_name(state: *mut c_void) -> *const c_char {
    let _ = state;
    guard(POLICY_NAME.as_ptr(), || POLICY_NAME.as_ptr())
}
