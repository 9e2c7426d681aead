//! What a policy object holds: the policy of the format chosen at its creation, counting
//! or not, and the function its single-key queries run (chosen by `query::query_for`).
//! Every other file of the C API reads policy objects through these types.

use crate::bloom::BloomPolicy;
use crate::compact::CompactPolicy;
use crate::error::Error;
use crate::policy::{FilterPolicy, sealed::WriteFilter};
use crate::stats::Counted;

/// A query whose arguments passed `leveldb_bloom_key_may_match`'s checks: `key` and `filter`
/// not NULL, pointing to `key_len` and `filter_len` readable bytes, both lengths below
/// `isize::MAX`.
pub(crate) type Query =
    unsafe extern "C" fn(&leveldb_bloom_policy, *const u8, usize, *const u8, usize) -> bool;

/// A filter policy named `leveldb.BuiltinBloomFilter2`: LevelDB's Bloom filters, or the
/// opt-in compact format, for one bits-per-key setting, counting its work or not. Immutable
/// after creation: one policy may be used from any number of threads at once.
#[allow(non_camel_case_types)]
pub struct leveldb_bloom_policy {
    /// How `leveldb_bloom_key_may_match` answers for this policy, chosen when it is made,
    /// so that a single-key query branches on nothing but its arguments' checks.
    pub(crate) query: Query,
    /// Counting, if asked to, into counts shared with the filter block builders made from
    /// this policy.
    pub(crate) counted: Counted<Policy>,
}

/// The policy of a C policy object, of the format chosen at its creation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Policy {
    Bloom(BloomPolicy),
    Compact(CompactPolicy),
}

impl FilterPolicy for Policy {
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        match self {
            Policy::Bloom(p) => p.filter_len(num_keys),
            Policy::Compact(p) => p.filter_len(num_keys),
        }
    }

    #[inline]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        match self {
            Policy::Bloom(p) => p.key_may_match(key, filter),
            Policy::Compact(p) => p.key_may_match(key, filter),
        }
    }

    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        match self {
            Policy::Bloom(p) => p.keys_may_match(keys, filter, results),
            Policy::Compact(p) => p.keys_may_match(keys, filter, results),
        }
    }
}

impl WriteFilter for Policy {
    fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        match self {
            Policy::Bloom(p) => p.write_filter(keys, filter),
            Policy::Compact(p) => p.write_filter(keys, filter),
        }
    }
}
