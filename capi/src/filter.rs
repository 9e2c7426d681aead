//! Building filters and answering queries through a policy.

use std::ffi::{c_char, c_int};

use super::boundary::try_zeroed_bytes_mut;
use super::boundary::{Batch, leveldb_bloom_slice, try_mut};
use super::boundary::{FfiResult, KeyArray, guard_status, try_filter, try_ref, with_keys};
use super::handle::leveldb_bloom_policy;
use super::status::leveldb_bloom_status::*;
use leveldb_bloom::FilterPolicy;

/// Builds the filter for `num_keys` keys into `out`: for a Bloom policy byte-identical to
/// LevelDB's `CreateFilter`, for a compact policy a compact filter
/// (`docs/compact-format.md`), as long as `leveldb_bloom_filter_len` says. Key `i` is `key_lens[i]` bytes at `keys[i]` (a NULL key is allowed when
/// its length is 0). `keys` and `key_lens` may be NULL when `num_keys` is 0; `out` may be
/// NULL when `out_cap` is 0, to ask for the size.
///
/// Returns `LEVELDB_BLOOM_OK` and stores the filter length in `*out_len` (bytes of `out`
/// past it are untouched). If `out_cap` is too small: `LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL`
/// and `*out_len` = the length needed. Other errors store 0 in `*out_len` (unless `out_len`
/// is NULL): `NULL_ARGUMENT` (policy, out_len, or a NULL array or key that has a length),
/// `INVALID_ARGUMENT` (misaligned `key_lens`, or a length no object can have), `TOO_LARGE`
/// (the filter size overflows `size_t`), `PANIC`.
///
/// # Safety
/// Each non-NULL pointer points to as many readable elements as its length says (`out`:
/// `out_cap` writable bytes) and the memory does not change during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_create_filter(
    policy: *const leveldb_bloom_policy,
    keys: *const *const c_char,
    key_lens: *const usize,
    num_keys: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> c_int {
    // SAFETY: the caller's guarantees for the key arrays, forwarded.
    let keys = || unsafe { KeyArray::split(keys, key_lens, num_keys) };
    // SAFETY: the caller's guarantees for the other pointers, forwarded.
    unsafe { create_filter(policy, out, out_cap, out_len, keys) }
}

/// Like `leveldb_bloom_create_filter`, with the keys given as `num_keys` slices (pointer and
/// length pairs, laid out as `leveldb::Slice`). `keys` may be NULL when `num_keys` is 0.
/// Same results and errors.
///
/// # Safety
/// As for `leveldb_bloom_create_filter`; each non-NULL `keys[i].data` points to
/// `keys[i].len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_create_filter_slices(
    policy: *const leveldb_bloom_policy,
    keys: *const leveldb_bloom_slice,
    num_keys: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> c_int {
    // SAFETY: the caller's guarantees for the slices, forwarded.
    let keys = || unsafe { KeyArray::slices(keys, num_keys) };
    // SAFETY: the caller's guarantees for the other pointers, forwarded.
    unsafe { create_filter(policy, out, out_cap, out_len, keys) }
}

/// The two create calls, whose keys `keys` checks and reads: `*out_len` cleared, the size
/// the caller must provide, then the build into `out`.
///
/// # Safety
/// `policy` is NULL or a live policy; a non-NULL `out` points to `out_cap` writable bytes;
/// `out_len` is NULL or writable; `keys` is safe to call.
unsafe fn create_filter<'k>(
    policy: *const leveldb_bloom_policy,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    keys: impl FnOnce() -> FfiResult<KeyArray<'k>>,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees `out_len` is NULL or writable.
        let out_len = unsafe { try_mut(out_len) }?;
        *out_len = 0;
        // SAFETY: the caller guarantees NULL or a live policy.
        let policy = unsafe { try_ref(policy) }?;
        // SAFETY: the caller guarantees `out_cap` writable bytes at a non-NULL `out`.
        unsafe { build_into(policy, keys()?, out, out_cap, out_len) }
    })
}

/// The size check, then the build into `out`.
///
/// # Safety
/// A non-NULL `out` points to `out_cap` writable bytes.
unsafe fn build_into(
    policy: &leveldb_bloom_policy,
    keys: KeyArray,
    out: *mut u8,
    out_cap: usize,
    out_len: &mut usize,
) -> FfiResult<()> {
    let needed = policy.format.filter_len(keys.len())?;
    if out_cap < needed {
        *out_len = needed;
        return Err(LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL);
    }
    // Only the filter's bytes become a slice (zeroed: the caller's memory may be
    // uninitialised); bytes past them stay untouched.
    // SAFETY: `out_cap >= needed` writable bytes at a non-NULL `out`, by the contract.
    let out = unsafe { try_zeroed_bytes_mut(out, needed) }?;
    *out_len = with_keys!(keys, |keys| policy.create_filter_into(keys, out))?;
    Ok(())
}

/// Answers `leveldb_bloom_key_may_match` for `num_keys` keys against one filter, faster
/// than one call per key: `results[i]` is 1 if key `i` may be in the filter, 0 if it is
/// certainly absent. Key `i` is `key_lens[i]` bytes at `keys[i]`, as for
/// `leveldb_bloom_create_filter`.
///
/// Returns `LEVELDB_BLOOM_OK`, or an error with every result set to 1 ("may match") when
/// `results` is usable: `NULL_ARGUMENT` (policy, filter, results, an array, or a NULL key
/// with a length), `INVALID_ARGUMENT` (misaligned `key_lens`, impossible lengths), `PANIC`.
///
/// # Safety
/// Non-NULL arrays hold `num_keys` elements, each non-NULL key its length in bytes, a
/// non-NULL `filter` `filter_len` bytes, and `results` `num_keys` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_key_may_match_batch(
    policy: *const leveldb_bloom_policy,
    keys: *const *const c_char,
    key_lens: *const usize,
    num_keys: usize,
    filter: *const u8,
    filter_len: usize,
    results: *mut u8,
) -> c_int {
    // SAFETY: the caller guarantees `results` holds `num_keys` writable bytes.
    unsafe { Batch::new(results, num_keys) }.answer(|results| {
        // SAFETY: the caller's guarantees for the policy, the keys and the filter.
        let (policy, keys, filter) = unsafe {
            (
                try_ref(policy)?,
                KeyArray::split(keys, key_lens, num_keys)?,
                try_filter(filter, filter_len)?,
            )
        };
        with_keys!(keys, |keys| policy.keys_may_match(keys, filter, results));
        Ok(())
    })
}
