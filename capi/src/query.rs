//! The single-key query (`leveldb_bloom_key_may_match` and LevelDB's `key_may_match`
//! callback): its argument checks, and the function each policy answers with.
//!
//! A query takes a few tens of nanoseconds, most of it the latency of the key's hash and of
//! the probes, and every instruction around them adds to it. So each policy carries the
//! function that answers for it, chosen when the policy is made (its format, whether it
//! counts, the processor's instructions), and a query branches on nothing but its arguments'
//! checks: one branch each, none ever taken by a valid call.

use std::ffi::c_char;
use std::slice;

use super::boundary::guard;
use super::handle::{Query, leveldb_bloom_policy};
use leveldb_bloom::{AnyPolicy, FilterPolicy};

/// The [`Query`] for `policy`, counting or not, compiled for the instructions the library
/// runs (`leveldb_bloom::instructions`: its one choice, which `LEVELDB_BLOOM_SIMD` pins).
pub(crate) fn query_for(policy: &AnyPolicy, counts: bool) -> Query {
    let bmi2 = leveldb_bloom::instructions().has_bmi2();
    match (policy, counts, bmi2) {
        (_, true, _) => counted,
        #[cfg(target_arch = "x86_64")]
        (AnyPolicy::Bloom(_), false, true) => bloom_bmi2,
        (AnyPolicy::Bloom(_), false, _) => bloom,
        (AnyPolicy::Compact(_), false, _) => compact,
    }
}

/// Whether `key` may be in `filter` (a filter built by this library or by LevelDB with any
/// bits per key). A Bloom policy answers every filter exactly as LevelDB's Bloom policy
/// does, malformed filters included, and compact filters "may match", as LevelDB does. A
/// compact policy answers compact filters by their format and every other filter as
/// LevelDB does.
///
/// `true` means "may match"; `false` means the key is certainly absent. Anything that cannot
/// be answered (NULL policy or filter, a NULL key with a length, a length no object can have)
/// answers `true`, since a wrong `false` would hide stored data.
///
/// Thread safety: any number of threads may query one policy at once.
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
    // Each check branches to an exit of its own: folded together into flag arithmetic,
    // they would cost every query several instructions more.
    if policy.is_null() {
        return refused(); // no policy
    }
    if filter.is_null() {
        return refused(); // no filter
    }
    if (key_len | filter_len) > isize::MAX as usize {
        return refused(); // a length no object can have
    }
    if key.is_null() {
        // SAFETY: forwarded from this function's contract.
        return unsafe { null_key_may_match(policy, key_len, filter, filter_len) };
    }
    // SAFETY: `policy` is not NULL, so the caller guarantees a live policy; `key` and
    // `filter` are not NULL, their lengths were checked, and the caller guarantees the bytes.
    unsafe { ((*policy).query)(&*policy, key.cast(), key_len, filter, filter_len) }
}

/// The answer to a query whose arguments were refused: "may match", since a wrong "no
/// match" would hide stored data.
#[cold]
#[inline(never)]
fn refused() -> bool {
    true
}

/// `leveldb_bloom_key_may_match` for a NULL key: the empty key if its length is 0, else "may match". Out of
/// line, so that the test for NULL stays a branch rather than a select on the key.
///
/// # Safety
/// As for `leveldb_bloom_key_may_match`, with `policy` and `filter` not NULL and lengths checked.
#[cold]
#[inline(never)]
unsafe fn null_key_may_match(
    policy: *const leveldb_bloom_policy,
    key_len: usize,
    filter: *const u8,
    filter_len: usize,
) -> bool {
    // SAFETY: as for the caller; the empty key is a valid pointer to 0 bytes.
    key_len != 0 || unsafe { ((*policy).query)(&*policy, [].as_ptr(), 0, filter, filter_len) }
}

/// Defines a [`Query`] that answers `$answer` for the checked `$key` and `$filter` of
/// `$policy`, guarded against panics.
macro_rules! query {
    ($(#[$attr:meta])* $name:ident, |$policy:pat_param, $key:ident, $filter:ident| $answer:expr) => {
        $(#[$attr])*
        unsafe extern "C" fn $name(
            $policy: &leveldb_bloom_policy,
            key: *const u8,
            key_len: usize,
            filter: *const u8,
            filter_len: usize,
        ) -> bool {
            // SAFETY: the caller passes checked arguments (`Query`).
            let ($key, $filter) = unsafe {
                (slice::from_raw_parts(key, key_len), slice::from_raw_parts(filter, filter_len))
            };
            guard(true, || $answer)
        }
    };
}

query!(
    /// An uncounted Bloom policy.
    bloom,
    |_, key, filter| leveldb_bloom::bloom::key_may_match(key, filter)
);

query!(
    /// An uncounted Bloom policy on a processor with BMI2: its three-operand shifts and
    /// multiplications leave the probes fewer register moves.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2")]
    bloom_bmi2,
    |_, key, filter| leveldb_bloom::bloom::key_may_match(key, filter)
);

query!(
    /// An uncounted compact policy.
    compact,
    |policy, key, filter| compact_key_may_match(&policy.format, key, filter)
);

query!(
    /// A counting policy of either format: the library's `Counted` answers and counts.
    counted,
    |policy, key, filter| policy.counted_key_may_match(key, filter)
);

/// The answer of `format`, a compact policy's (the only format [`query_for`] gives
/// [`compact`]). Out of line, so that the panic guard's frame holds one
/// call and the compact query's own calls are jumps; and without the Bloom query inlined
/// beside it, whose registers would give it a stack frame.
#[inline(never)]
fn compact_key_may_match(format: &AnyPolicy, key: &[u8], filter: &[u8]) -> bool {
    match format {
        AnyPolicy::Compact(policy) => policy.key_may_match(key, filter),
        other => other_key_may_match(other, key, filter),
    }
}

#[inline(never)]
fn other_key_may_match(format: &AnyPolicy, key: &[u8], filter: &[u8]) -> bool {
    format.key_may_match(key, filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leveldb_bloom::BloomPolicy;

    /// The library's one choice of instructions reaches the C API's query:
    /// `LEVELDB_BLOOM_SIMD=portable` (the test command runs this test under it too) gives
    /// the query compiled for the target's baseline.
    #[test]
    fn the_bloom_query_follows_the_library_s_choice() {
        let policy = AnyPolicy::Bloom(BloomPolicy::new(10).unwrap());
        let chosen = query_for(&policy, false);
        let is = |query: Query| std::ptr::fn_addr_eq(chosen, query);
        let portable = std::env::var("LEVELDB_BLOOM_SIMD").is_ok_and(|v| v == "portable");
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let bmi2 = is(bloom_bmi2);
            // Never where the processor lacks BMI2; always where it has the library's top
            // level and nothing pinned the portable code.
            if bmi2 {
                assert!(has!("bmi2"), "BMI2 code chosen on a processor without BMI2");
            }
            let top = has!("avx2") && has!("bmi1") && has!("bmi2") && has!("popcnt");
            assert_eq!(
                bmi2,
                top && !portable,
                "top level {top}, pinned portable {portable}"
            );
        }
        if portable || cfg!(not(target_arch = "x86_64")) {
            assert!(is(bloom));
        }
    }
}
