//! Either filter format behind one type: what the filter block builder and the C API hold.

use crate::bloom::{self, BloomPolicy};
use crate::compact::{self, CompactPolicy};
use crate::error::Error;
use crate::remainder::Remainder;

/// A filter format: LevelDB's Bloom filters, or the opt-in compact filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `leveldb.BuiltinBloomFilter2` Bloom filters, byte-identical to LevelDB's.
    Bloom,
    /// Compact filters (`docs/compact-format.md`); stock LevelDB reads them as "may match".
    Compact,
}

/// A filter policy of either format. Both are named `leveldb.BuiltinBloomFilter2`.
///
/// ```
/// use leveldb_bloom::{FilterPolicy, Format};
///
/// let policy = FilterPolicy::for_fp_rate(0.005, Format::Compact)?;
/// let mut filter = Vec::new();
/// policy.create_filter(["a", "b"], &mut filter)?;
/// assert!(policy.key_may_match(b"a", &filter));
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FilterPolicy {
    /// Builds LevelDB's Bloom filters and answers every filter as LevelDB does.
    Bloom(BloomPolicy),
    /// Builds compact filters; answers them, and LevelDB's Bloom filters as LevelDB does.
    Compact(CompactPolicy),
}

impl FilterPolicy {
    /// The policy of `format` with the fewest bits per key expected to reach `fp_rate`
    /// (see [`BloomPolicy::for_fp_rate`] and [`CompactPolicy::for_fp_rate`]).
    pub fn for_fp_rate(fp_rate: f64, format: Format) -> Result<Self, Error> {
        Ok(match format {
            Format::Bloom => FilterPolicy::Bloom(BloomPolicy::for_fp_rate(fp_rate)?),
            Format::Compact => FilterPolicy::Compact(CompactPolicy::for_fp_rate(fp_rate)?),
        })
    }

    /// The format of the filters this policy builds.
    pub fn format(&self) -> Format {
        match self {
            FilterPolicy::Bloom(_) => Format::Bloom,
            FilterPolicy::Compact(_) => Format::Compact,
        }
    }

    /// The bits per key the policy was created with (or chose).
    pub fn bits_per_key(&self) -> f64 {
        match self {
            FilterPolicy::Bloom(p) => f64::from(p.bits_per_key()),
            FilterPolicy::Compact(p) => p.bits_per_key(),
        }
    }

    /// The policy name, `leveldb.BuiltinBloomFilter2`, for both formats.
    pub fn name(&self) -> &'static str {
        bloom::NAME
    }

    /// The length in bytes of the filter for `num_keys` keys; the same for both formats.
    pub fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        match self {
            FilterPolicy::Bloom(p) => p.filter_len(num_keys),
            FilterPolicy::Compact(p) => p.filter_len(num_keys),
        }
    }

    /// Builds the filter for `keys` and appends it to `dst`. On error `dst` is unchanged.
    pub fn create_filter<I>(&self, keys: I, dst: &mut Vec<u8>) -> Result<(), Error>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        match self {
            FilterPolicy::Bloom(p) => p.create_filter(keys, dst),
            FilterPolicy::Compact(p) => p.create_filter(keys, dst),
        }
    }

    /// Writes the filter for `keys` into the zeroed `filter` of exactly
    /// [`filter_len`](Self::filter_len) bytes. Only a compact build can fail (memory).
    pub(crate) fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        match self {
            FilterPolicy::Bloom(p) => {
                p.write_filter(keys, filter);
                Ok(())
            }
            FilterPolicy::Compact(p) => p.write_filter(keys, filter),
        }
    }

    /// Whether `key` may be in `filter`.
    pub fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        self.query(key, filter, Remainder::new)
    }

    /// [`key_may_match`](Self::key_may_match) with a caller-supplied Bloom remainder.
    #[inline]
    pub(crate) fn query(
        &self,
        key: &[u8],
        filter: &[u8],
        remainder: impl FnOnce(u64) -> Remainder,
    ) -> bool {
        match self {
            FilterPolicy::Bloom(_) => bloom::query(key, filter, remainder),
            FilterPolicy::Compact(_) => compact::query(key, filter, remainder),
        }
    }

    /// Answers [`key_may_match`](Self::key_may_match) for each of `keys` against one
    /// `filter`: `results[i]` for key `i`. Keys past `results.len()` are not read.
    pub fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        self.query_batch(keys, filter, results, Remainder::new)
    }

    /// [`keys_may_match`](Self::keys_may_match) with a caller-supplied Bloom remainder.
    pub(crate) fn query_batch<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
        remainder: impl FnOnce(u64) -> Remainder,
    ) {
        match self {
            FilterPolicy::Bloom(_) => bloom::query_batch(keys, filter, results, remainder),
            FilterPolicy::Compact(_) => compact::query_batch(keys, filter, results, remainder),
        }
    }
}

impl From<BloomPolicy> for FilterPolicy {
    fn from(policy: BloomPolicy) -> Self {
        FilterPolicy::Bloom(policy)
    }
}

impl From<CompactPolicy> for FilterPolicy {
    fn from(policy: CompactPolicy) -> Self {
        FilterPolicy::Compact(policy)
    }
}
