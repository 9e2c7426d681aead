//! A policy whose format is chosen at run time.

use crate::bloom::BloomPolicy;
use crate::compact::CompactPolicy;
use crate::error::Error;
use crate::policy::{FilterPolicy, sealed::WriteFilter};

/// A policy of either format, chosen at run time (a setting, an environment variable): it
/// builds and answers as the policy it holds.
///
/// ```
/// use leveldb_bloom::{AnyPolicy, CompactPolicy, FilterPolicy};
///
/// let policy = AnyPolicy::Compact(CompactPolicy::new(10.0)?);
/// let mut filter = Vec::new();
/// policy.create_filter(["hello"], &mut filter)?;
/// assert!(policy.key_may_match(b"hello", &filter));
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnyPolicy {
    /// LevelDB's own Bloom filters.
    Bloom(BloomPolicy),
    /// The compact format.
    Compact(CompactPolicy),
}

impl FilterPolicy for AnyPolicy {
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        match self {
            AnyPolicy::Bloom(p) => p.filter_len(num_keys),
            AnyPolicy::Compact(p) => p.filter_len(num_keys),
        }
    }

    #[inline]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        match self {
            AnyPolicy::Bloom(p) => p.key_may_match(key, filter),
            AnyPolicy::Compact(p) => p.key_may_match(key, filter),
        }
    }

    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        match self {
            AnyPolicy::Bloom(p) => p.keys_may_match(keys, filter, results),
            AnyPolicy::Compact(p) => p.keys_may_match(keys, filter, results),
        }
    }
}

impl WriteFilter for AnyPolicy {
    fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        match self {
            AnyPolicy::Bloom(p) => p.write_filter(keys, filter),
            AnyPolicy::Compact(p) => p.write_filter(keys, filter),
        }
    }
}
