//! The policy object, filter creation and filter queries.

use std::ffi::{CStr, c_char, c_int};

use super::boundary::try_zeroed_bytes_mut;
use super::boundary::{FfiResult, KeyArray, guard, guard_query, guard_status, try_ref, try_slice};
use super::boundary::{leveldb_bloom_slice, results_may_match_on_error, try_mut, try_results};
use super::status::leveldb_bloom_status::{self, *};
use crate::bloom::BloomPolicy;
use crate::compact::CompactPolicy;
use crate::policy::{FilterPolicy, Format};
use crate::remainder::ReciprocalCache;
use crate::stats::{Stats, StatsSnapshot};

/// A filter policy named `leveldb.BuiltinBloomFilter2`: LevelDB's Bloom filters, or the
/// opt-in compact format, for one bits-per-key setting. Immutable after creation: one policy
/// may be used from any number of threads at once.
#[allow(non_camel_case_types)]
pub struct leveldb_bloom_policy {
    pub(crate) policy: FilterPolicy,
    /// Shared with the filter block builders made from this policy.
    pub(crate) stats: Stats,
    /// Spares queries a division per filter size.
    pub(crate) reciprocals: ReciprocalCache,
}

impl leveldb_bloom_policy {
    /// Builds the filter for `keys` into `filter`, which is zeroed and exactly
    /// `filter_len(keys.len())` bytes long (each caller got it zeroed from its allocator or
    /// zeroed the caller's memory already), and counts it.
    pub(crate) fn write_zeroed_filter(&self, keys: KeyArray, filter: &mut [u8]) -> FfiResult<()> {
        self.policy.write_filter(keys.iter(), filter)?;
        self.stats.record_filter(keys.len());
        Ok(())
    }

    /// Answers a query, counting it.
    #[inline(always)]
    pub(crate) fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let may_match = self
            .policy
            .query(key, filter, |bits| self.reciprocals.remainder(bits));
        self.stats.record_query(may_match);
        may_match
    }
}

/// The policy name as a C string; equal to `bloom::NAME` (tested).
pub(crate) const POLICY_NAME: &CStr = c"leveldb.BuiltinBloomFilter2";

/// Creates a Bloom filter policy that builds the same filters as LevelDB's
/// `leveldb_filterpolicy_create_bloom(bits_per_key)`.
///
/// Returns NULL if `bits_per_key` is negative (undefined behaviour in LevelDB) or memory
/// runs out. `bits_per_key` 0 is valid (one probe per key into a 64-bit filter). The caller
/// owns the policy and releases it with `leveldb_bloom_policy_destroy`, or hands it to
/// LevelDB as the state of `leveldb_filterpolicy_create` (see `leveldb_bloom_cb_destructor`).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_policy_create(bits_per_key: c_int) -> *mut leveldb_bloom_policy {
    guard(std::ptr::null_mut(), || {
        into_raw(BloomPolicy::new(bits_per_key).map(FilterPolicy::Bloom))
    })
}

/// A new C policy object for `policy`, or NULL for an error.
fn into_raw(policy: Result<FilterPolicy, crate::Error>) -> *mut leveldb_bloom_policy {
    match policy {
        Ok(policy) => Box::into_raw(Box::new(leveldb_bloom_policy {
            policy,
            stats: Stats::new(),
            reciprocals: ReciprocalCache::default(),
        })),
        Err(_) => std::ptr::null_mut(),
    }
}

/// The filter formats a policy can build (`leveldb_bloom_policy_create_for_fp_rate`,
/// `leveldb_bloom_policy_format`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum leveldb_bloom_format {
    /// LevelDB's own Bloom filters, byte-identical to `leveldb_filterpolicy_create_bloom`.
    LEVELDB_BLOOM_FORMAT_BLOOM = 0,
    /// The compact format (`docs/compact-format.md`): about a third of the Bloom filter's
    /// false positives in the same memory. Stock LevelDB answers these filters "may match".
    LEVELDB_BLOOM_FORMAT_COMPACT = 1,
}

/// Creates a compact-format policy (opt-in). Its filters are as long as LevelDB's Bloom
/// filters at the same bits per key, with far fewer false positives (README, "Compact
/// filters"); their last byte (32 to 255) makes stock LevelDB, and Bloom policies of this
/// library, answer "may match", so a database written with it stays readable everywhere.
/// (Below about 3 bits per key no fingerprint fits and the filter is all zero, which every
/// reader, LevelDB included, also answers "may match".)
/// The policy keeps LevelDB's name, `"leveldb.BuiltinBloomFilter2"`, and answers LevelDB's
/// Bloom filters exactly as LevelDB does, so existing tables keep their filters.
///
/// `bits_per_key` may be fractional, from 0 to 32. Returns NULL if it is outside that range
/// or not a number, or if memory runs out. Ownership as for `leveldb_bloom_policy_create`.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_policy_create_compact(
    bits_per_key: f64,
) -> *mut leveldb_bloom_policy {
    guard(std::ptr::null_mut(), || {
        into_raw(CompactPolicy::new(bits_per_key).map(FilterPolicy::Compact))
    })
}

/// Creates a policy of `format` (a `leveldb_bloom_format` value) with the fewest bits per
/// key expected to give at most `target_fp_rate` false positives: for Bloom the smallest
/// whole bits per key (1 to 100) whose standard model `(1 - e^(-k/b))^k` reaches it (LevelDB's
/// filters measure somewhat worse); for compact `log2(1/target) + 1.75` bits per key,
/// measured on filters of 50 to 200 keys.
///
/// Returns NULL if `target_fp_rate` is not in (0, 1) or out of the format's reach (Bloom:
/// below about 2.5e-18, which needs 100 bits per key; compact: below about 8e-10, which
/// needs 32), if `format` is unknown, or if memory runs out. Ownership as for
/// `leveldb_bloom_policy_create`.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_policy_create_for_fp_rate(
    target_fp_rate: f64,
    format: c_int,
) -> *mut leveldb_bloom_policy {
    guard(std::ptr::null_mut(), || {
        let format = match format {
            0 => Format::Bloom,
            1 => Format::Compact,
            _ => return std::ptr::null_mut(),
        };
        into_raw(FilterPolicy::for_fp_rate(target_fp_rate, format))
    })
}

/// The format of the filters `policy` builds, a `leveldb_bloom_format` value, or -1 if
/// `policy` is NULL.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_format(policy: *const leveldb_bloom_policy) -> c_int {
    guard(-1, || {
        // SAFETY: the caller guarantees NULL or a live policy.
        let policy = unsafe { try_ref(policy) };
        policy.map_or(-1, |p| match p.policy.format() {
            Format::Bloom => leveldb_bloom_format::LEVELDB_BLOOM_FORMAT_BLOOM as c_int,
            Format::Compact => leveldb_bloom_format::LEVELDB_BLOOM_FORMAT_COMPACT as c_int,
        })
    })
}

/// The bits per key of `policy` (chosen, for `leveldb_bloom_policy_create_for_fp_rate`), or
/// -1 if `policy` is NULL.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_bits_per_key(
    policy: *const leveldb_bloom_policy,
) -> f64 {
    guard(-1.0, || {
        // SAFETY: the caller guarantees NULL or a live policy.
        let policy = unsafe { try_ref(policy) };
        policy.map_or(-1.0, |p| p.policy.bits_per_key())
    })
}

/// Destroys a policy. NULL is a no-op.
///
/// # Safety
/// `policy` is NULL or was returned by `leveldb_bloom_policy_create` and not destroyed yet;
/// no other thread is using it, and it is not owned by a LevelDB filter policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_destroy(policy: *mut leveldb_bloom_policy) {
    guard((), || {
        if !policy.is_null() {
            // SAFETY: the caller passes ownership of a policy made by `Box::into_raw`.
            drop(unsafe { Box::from_raw(policy) });
        }
    })
}

/// The policy's name, `"leveldb.BuiltinBloomFilter2"`: a static string, valid for the life
/// of the process, never to be freed. Returned for a NULL policy too.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_name(
    policy: *const leveldb_bloom_policy,
) -> *const c_char {
    let _ = policy;
    guard(POLICY_NAME.as_ptr(), || POLICY_NAME.as_ptr())
}

/// The number of bytes of the filter for `num_keys` keys (duplicates count), the same as
/// LevelDB: `max(num_keys * bits_per_key, 64)` bits rounded up to bytes, plus one byte.
/// Returns 0 if `policy` is NULL or the size overflows `size_t`.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_len(
    policy: *const leveldb_bloom_policy,
    num_keys: usize,
) -> usize {
    guard(0, || {
        // SAFETY: the caller guarantees NULL or a live policy.
        let policy = unsafe { try_ref(policy) };
        policy.map_or(0, |p| p.policy.filter_len(num_keys).unwrap_or(0))
    })
}

/// Builds the filter for `num_keys` keys into `out`, byte-identical to LevelDB's
/// `CreateFilter`. Key `i` is `key_lens[i]` bytes at `keys[i]` (a NULL key is allowed when
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
    guard_status(|| {
        // SAFETY: the caller guarantees `out_len` is NULL or writable.
        let out_len = unsafe { try_mut(out_len) }?;
        *out_len = 0;
        // SAFETY: the caller's guarantees for `policy`, `keys` and `key_lens`.
        let (policy, keys) =
            unsafe { (try_ref(policy)?, KeyArray::split(keys, key_lens, num_keys)?) };
        // SAFETY: the caller guarantees `out_cap` writable bytes at a non-NULL `out`.
        unsafe { create_filter(policy, keys, out, out_cap, out_len) }
    })
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
    guard_status(|| {
        // SAFETY: the caller guarantees `out_len` is NULL or writable.
        let out_len = unsafe { try_mut(out_len) }?;
        *out_len = 0;
        // SAFETY: the caller's guarantees for `policy` and `keys`.
        let (policy, keys) = unsafe { (try_ref(policy)?, KeyArray::slices(keys, num_keys)?) };
        // SAFETY: the caller guarantees `out_cap` writable bytes at a non-NULL `out`.
        unsafe { create_filter(policy, keys, out, out_cap, out_len) }
    })
}

/// The shared end of the two create calls: size check, then build into `out`.
///
/// # Safety
/// A non-NULL `out` points to `out_cap` writable bytes.
unsafe fn create_filter(
    policy: &leveldb_bloom_policy,
    keys: KeyArray,
    out: *mut u8,
    out_cap: usize,
    out_len: &mut usize,
) -> FfiResult<()> {
    let needed = policy.policy.filter_len(keys.len())?;
    if out_cap < needed {
        *out_len = needed;
        return Err(LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL);
    }
    // SAFETY: `out_cap >= needed` writable bytes at a non-NULL `out`, by the contract.
    let out = unsafe { try_zeroed_bytes_mut(out, needed) }?;
    policy.write_zeroed_filter(keys, out)?;
    *out_len = needed;
    Ok(())
}

/// Whether `key` may be in `filter` (a filter built by this library or by LevelDB with any
/// bits per key), answered exactly as LevelDB answers, malformed filters included.
///
/// `true` means "may match"; `false` means the key is certainly absent. Anything that cannot
/// be answered (NULL policy or filter, a NULL key with a length) answers `true`, since a wrong
/// `false` would hide stored data.
///
/// # Safety
/// Non-NULL `key` and `filter` point to `key_len` and `filter_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_key_may_match(
    policy: *const leveldb_bloom_policy,
    key: *const c_char,
    key_len: usize,
    filter: *const u8,
    filter_len: usize,
) -> bool {
    guard_query(|| {
        // SAFETY: the caller guarantees NULL or a live policy, and the byte extents.
        let (policy, key, filter) = unsafe {
            (
                try_ref(policy)?,
                try_slice(key.cast(), key_len)?,
                try_filter(filter, filter_len)?,
            )
        };
        Ok(policy.key_may_match(key, filter))
    })
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
    let status = guard_status(|| {
        // SAFETY: the caller guarantees `results` holds `num_keys` writable bytes.
        let results = unsafe { try_results(results, num_keys) }?;
        // SAFETY: the caller's guarantees for the policy, the keys and the filter.
        let (policy, keys, filter) = unsafe {
            (
                try_ref(policy)?,
                KeyArray::split(keys, key_lens, num_keys)?,
                try_filter(filter, filter_len)?,
            )
        };
        let policy_format = &policy.policy;
        policy_format.query_batch(keys.iter(), filter, results, |bits| {
            policy.reciprocals.remainder(bits)
        });
        policy.stats.record_queries(results);
        Ok(())
    });
    // SAFETY: the caller guarantees `results` holds `num_keys` writable bytes.
    unsafe { results_may_match_on_error(status, results, num_keys) }
}

/// A filter for a query: unlike a key, a NULL filter is never "empty", it is missing.
///
/// # Safety
/// A non-NULL `filter` points to `len` readable bytes.
pub(crate) unsafe fn try_filter<'a>(filter: *const u8, len: usize) -> FfiResult<&'a [u8]> {
    if filter.is_null() {
        return Err(LEVELDB_BLOOM_ERR_NULL_ARGUMENT);
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { try_slice(filter, len) }
}

/// Filter statistics, as returned by `leveldb_bloom_policy_stats` and
/// `leveldb_bloom_global_stats`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct leveldb_bloom_stats {
    /// Filters created (each create call or callback, however many keys).
    pub filters_built: u64,
    /// Keys added to those filters (duplicates count).
    pub keys_added: u64,
    /// Queries answered (single key, callback, or filter block).
    pub queries: u64,
    /// Queries answered "no match": the table reads a database avoided.
    pub no_match: u64,
}

impl From<StatsSnapshot> for leveldb_bloom_stats {
    fn from(s: StatsSnapshot) -> Self {
        leveldb_bloom_stats {
            filters_built: s.filters_built,
            keys_added: s.keys_added,
            queries: s.queries,
            no_match: s.no_match,
        }
    }
}

/// Stores in `*stats` what `policy` has counted since its creation or its last reset
/// (filter block builders made from it count into it too). Counting is thread-safe and
/// costs no shared cache line between threads; a read while other threads work sees each
/// counter at some moment during the call.
///
/// Errors: `NULL_ARGUMENT` (policy or stats); `PANIC`.
///
/// # Safety
/// `policy` is NULL or a live policy; `stats` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_stats(
    policy: *const leveldb_bloom_policy,
    stats: *mut leveldb_bloom_stats,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees NULL or valid pointers.
        let (policy, stats) = unsafe { (try_ref(policy)?, try_mut(stats)?) };
        *stats = policy.stats.snapshot().into();
        Ok(())
    })
}

/// Restarts `policy`'s counts from zero. The process-wide counts are not affected.
///
/// Errors: `NULL_ARGUMENT`; `PANIC`.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_stats_reset(
    policy: *const leveldb_bloom_policy,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees NULL or a live policy.
        unsafe { try_ref(policy) }?.stats.reset();
        Ok(())
    })
}

/// Stores in `*stats` what every policy of this library in the process has counted since
/// start or the last `leveldb_bloom_global_stats_reset`, destroyed policies and the
/// drop-in library's included.
///
/// Errors: `NULL_ARGUMENT`; `PANIC`.
///
/// # Safety
/// `stats` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_global_stats(stats: *mut leveldb_bloom_stats) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees NULL or a writable struct.
        *unsafe { try_mut(stats) }? = crate::stats::global_snapshot().into();
        Ok(())
    })
}

/// Restarts the process-wide counts from zero. Per-policy counts are not affected.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_global_stats_reset() {
    guard((), crate::stats::global_reset)
}

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
    fn c_name_is_the_policy_name() {
        assert_eq!(POLICY_NAME.to_str().unwrap(), crate::bloom::NAME);
    }

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
