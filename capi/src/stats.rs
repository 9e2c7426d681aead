//! Statistics: what a policy, and the whole process, has counted.

use std::ffi::c_int;

use super::boundary::{guard, guard_status, try_mut, try_ref};
use super::handle::leveldb_bloom_policy;
use super::status::leveldb_bloom_status::LEVELDB_BLOOM_ERR_NOT_COUNTED;
use leveldb_bloom::StatsSnapshot;

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

/// Stores in `*stats` what `policy`, a counting policy (`leveldb_bloom_policy_counted`), has
/// counted since its creation or its last reset (filter block builders made from it count
/// into it too). Counting is thread-safe and cheap: each thread counts in one of 64 stripes
/// of cache lines of their own, picked by its stack's address (threads that pick the same
/// stripe share its line, and lose no count); a read while other threads work sees each
/// counter at some moment during the call, never more "no match" answers than queries.
///
/// Errors: `NULL_ARGUMENT` (policy or stats); `NOT_COUNTED` (a policy that does not count;
/// `*stats` is left alone); `PANIC`.
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
        let Some(counted) = &policy.counted else {
            return Err(LEVELDB_BLOOM_ERR_NOT_COUNTED);
        };
        *stats = counted.stats().into();
        Ok(())
    })
}

/// Restarts `policy`'s counts from zero. The process-wide counts are not affected.
///
/// Errors: `NULL_ARGUMENT`; `NOT_COUNTED` (a policy that does not count); `PANIC`.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_policy_stats_reset(
    policy: *const leveldb_bloom_policy,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees NULL or a live policy.
        let policy = unsafe { try_ref(policy) }?;
        let Some(counted) = &policy.counted else {
            return Err(LEVELDB_BLOOM_ERR_NOT_COUNTED);
        };
        counted.reset_stats();
        Ok(())
    })
}

/// Stores in `*stats` what every counting policy of this library in the process
/// (`leveldb_bloom_policy_counted`; the drop-in's when `LEVELDB_BLOOM_STATS_FILE` is set) has
/// counted since start or the last `leveldb_bloom_global_stats_reset`, destroyed policies
/// included. Policies that do not count add nothing.
///
/// Errors: `NULL_ARGUMENT`; `PANIC`.
///
/// # Safety
/// `stats` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_global_stats(stats: *mut leveldb_bloom_stats) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees NULL or a writable struct.
        *unsafe { try_mut(stats) }? = leveldb_bloom::global_stats().into();
        Ok(())
    })
}

/// Restarts the process-wide counts from zero. Per-policy counts are not affected.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_global_stats_reset() {
    guard((), leveldb_bloom::reset_global_stats)
}
