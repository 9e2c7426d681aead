//! The policy object: creation, its format and settings, destruction.

use std::ffi::{CStr, c_char, c_int};

use super::boundary::{create_from, destroy, guard, try_ref};
pub use super::handle::leveldb_bloom_policy;
use super::query::query_for;
use leveldb_bloom::BloomPolicy;
use leveldb_bloom::CompactPolicy;
use leveldb_bloom::Error;
use leveldb_bloom::FilterPolicy;
use leveldb_bloom::{AnyPolicy, Counted, Format};

impl leveldb_bloom_policy {
    /// A policy object for `policy`, counting from zero if `counts`.
    fn new(policy: AnyPolicy, counts: bool) -> Box<Self> {
        Box::new(leveldb_bloom_policy {
            query: query_for(&policy, counts),
            format: policy,
            counted: counts.then(|| Counted::new(policy)),
        })
    }
}

/// The policy name as a C string; equal to `leveldb_bloom::NAME` (tested).
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
        into_raw(BloomPolicy::new(bits_per_key).map(AnyPolicy::Bloom))
    })
}

/// A new C policy object for `policy`, not counting, or NULL for an error.
fn into_raw(policy: Result<AnyPolicy, Error>) -> *mut leveldb_bloom_policy {
    match policy {
        Ok(policy) => Box::into_raw(leveldb_bloom_policy::new(policy, false)),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Creates a policy that builds and answers exactly as `policy` does and also counts its
/// work: the filters it builds, the keys in them, the queries it answers and the "no match"
/// answers among them (`leveldb_bloom_policy_stats`), into counts of its own and into the
/// process-wide ones (`leveldb_bloom_global_stats`). Filter block builders made from it count
/// as it does. Policies made by the other `_create` functions count nothing, and their
/// queries do no work for statistics.
///
/// Returns NULL if `policy` is NULL or memory runs out. The caller owns the new policy, and
/// still owns `policy`; each is released with `leveldb_bloom_policy_destroy`.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_counted(
    policy: *const leveldb_bloom_policy,
) -> *mut leveldb_bloom_policy {
    // SAFETY: the caller guarantees NULL or a live policy.
    unsafe { create_from(policy, |p| leveldb_bloom_policy::new(p.format, true)) }
}

/// The filter formats a policy can build (`leveldb_bloom_policy_create_for_fp_rate`,
/// `leveldb_bloom_policy_format`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum leveldb_bloom_format {
    /// LevelDB's own Bloom filters, byte-identical to `leveldb_filterpolicy_create_bloom`.
    LEVELDB_BLOOM_FORMAT_BLOOM = 0,
    /// The compact format (`docs/compact-format.md`): far fewer false positives than the
    /// Bloom filter in the same memory (measured: `docs/benchmarks.md`). Stock LevelDB
    /// answers these filters "may match".
    LEVELDB_BLOOM_FORMAT_COMPACT = 1,
}

/// The library's formats, as the C API numbers them: the one mapping between the two.
impl From<Format> for leveldb_bloom_format {
    fn from(format: Format) -> Self {
        match format {
            Format::Bloom => leveldb_bloom_format::LEVELDB_BLOOM_FORMAT_BLOOM,
            Format::Compact => leveldb_bloom_format::LEVELDB_BLOOM_FORMAT_COMPACT,
        }
    }
}

impl leveldb_bloom_format {
    /// The format a C caller's `value` names, if any.
    fn named(value: c_int) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|&format| leveldb_bloom_format::from(format) as c_int == value)
    }
}

/// Creates a compact-format policy (opt-in). Its filters are as long as LevelDB's Bloom
/// filters at the same bits per key, with far fewer false positives (`docs/compact-format.md`
/// gives the rate of every filter, `2^-r (1 - f/2)`; `docs/benchmarks.md` measures both,
/// "The compact format's gain"); their last byte, 31, makes stock LevelDB, and Bloom
/// policies of this library, answer "may match", so a database written with it stays
/// readable everywhere. (Below about 1.1 bits per key no
/// filter fits and the filter is all zero, which every reader, LevelDB included, also
/// answers "may match".)
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
        into_raw(CompactPolicy::new(bits_per_key).map(AnyPolicy::Compact))
    })
}

/// Creates a policy of `format` (a `leveldb_bloom_format` value) with the fewest bits per
/// key expected to give at most `target_fp_rate` false positives: for Bloom the smallest
/// whole bits per key (1 to 100) whose standard model `(1 - e^(-k/b))^k` reaches it (LevelDB's
/// filters measure somewhat worse); for compact the fewest bits per key, in 64ths, at which
/// the builder's first choice of shape gives every filter of 50 to 10,000,000 keys at most
/// the target (`docs/compact-format.md`, "Building"; smaller filters may get more).
///
/// Returns NULL if `target_fp_rate` is not in (0, 1) or out of the format's reach (Bloom:
/// below about 2.5e-18, which needs 100 bits per key; compact: below about 8e-10, which
/// filters of about 60 keys reach only with more than 32), if `format` is unknown, or if
/// memory runs out. Ownership as for `leveldb_bloom_policy_create`.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_policy_create_for_fp_rate(
    target_fp_rate: f64,
    format: c_int,
) -> *mut leveldb_bloom_policy {
    guard(std::ptr::null_mut(), || {
        into_raw(match leveldb_bloom_format::named(format) {
            Some(Format::Bloom) => BloomPolicy::for_fp_rate(target_fp_rate).map(AnyPolicy::Bloom),
            Some(Format::Compact) => {
                CompactPolicy::for_fp_rate(target_fp_rate).map(AnyPolicy::Compact)
            }
            None => return std::ptr::null_mut(),
        })
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
        policy.map_or(-1, |p| {
            leveldb_bloom_format::from(p.format.format()) as c_int
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
        policy.map_or(-1.0, |p| p.format.bits_per_key())
    })
}

/// Destroys a policy. NULL is a no-op.
///
/// # Safety
/// `policy` is NULL or was returned by `leveldb_bloom_policy_create` and not destroyed yet;
/// no other thread is using it, and it is not owned by a LevelDB filter policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_destroy(policy: *mut leveldb_bloom_policy) {
    // SAFETY: the caller passes ownership of a policy made by `Box::into_raw` (or NULL).
    unsafe { destroy(policy) }
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

/// The number of bytes of the filter for `num_keys` keys (duplicates count). Bloom
/// policies: the same as LevelDB, `max(num_keys * bits_per_key, 64)` bits rounded up to
/// bytes, plus one byte. Compact policies: the same with their bits per key, which may be
/// fractional (`ceil(num_keys * bits_per_key)` bits, at least 64).
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
        policy.map_or(0, |p| p.format.filter_len(num_keys).unwrap_or(0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_name_is_the_policy_name() {
        assert_eq!(POLICY_NAME.to_str().unwrap(), leveldb_bloom::NAME);
    }
}
