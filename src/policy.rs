//! Either filter format behind one type: what the filter block builder and the C API hold.

use crate::bloom::BloomPolicy;
use crate::compact::CompactPolicy;
use crate::error::Error;
use crate::filter::{FilterFormat, sealed::WriteFilter};

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
/// use leveldb_bloom::{FilterFormat, FilterPolicy, Format};
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
}

/// Runs `$call` with `$p` bound to the policy, whichever its format.
macro_rules! dispatch {
    ($policy:expr, $p:ident => $call:expr) => {
        match $policy {
            FilterPolicy::Bloom($p) => $call,
            FilterPolicy::Compact($p) => $call,
        }
    };
}

impl FilterFormat for FilterPolicy {
    /// The same for both formats at the same bits per key.
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        dispatch!(self, p => p.filter_len(num_keys))
    }

    #[inline]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        dispatch!(self, p => p.key_may_match(key, filter))
    }

    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        dispatch!(self, p => p.keys_may_match(keys, filter, results))
    }
}

impl WriteFilter for FilterPolicy {
    fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        dispatch!(self, p => p.write_filter(keys, filter))
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
