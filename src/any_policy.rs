//! The filter formats, and a policy whose format is chosen at run time.

use crate::bloom::BloomPolicy;
use crate::compact::CompactPolicy;
use crate::error::Error;
use crate::policy::{FilterPolicy, sealed::WriteFilter};

/// A filter format: what a policy builds. Every name for the choice (the C API's
/// `leveldb_bloom_format`, the drop-in's `LEVELDB_BLOOM_FORMAT`, the command's `--format`, the
/// bindings') is this one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// LevelDB's own Bloom filters, byte for byte ([`BloomPolicy`]).
    Bloom,
    /// The compact format ([`CompactPolicy`]): stock LevelDB answers its filters "may match".
    Compact,
}

impl Format {
    /// Every format, the default first.
    pub const ALL: [Format; 2] = [Format::Bloom, Format::Compact];

    /// The format's name where a program or a person spells it: `"bloom"`, `"compact"`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Bloom => "bloom",
            Format::Compact => "compact",
        }
    }

    /// The format a name spells ([`Format::name`]), exactly; `None` for any other text.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|format| format.name() == name)
    }
}

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

impl AnyPolicy {
    /// The format this policy builds.
    pub const fn format(&self) -> Format {
        match self {
            AnyPolicy::Bloom(_) => Format::Bloom,
            AnyPolicy::Compact(_) => Format::Compact,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_found_by_its_name_alone() {
        for format in Format::ALL {
            assert_eq!(Format::from_name(format.name()), Some(format));
        }
        for other in ["", "Bloom", "compact ", "ribbon"] {
            assert_eq!(Format::from_name(other), None, "{other:?}");
        }
        let bloom = AnyPolicy::Bloom(BloomPolicy::new(10).unwrap());
        let compact = AnyPolicy::Compact(CompactPolicy::new(10.0).unwrap());
        assert_eq!(
            (bloom.format(), compact.format()),
            (Format::Bloom, Format::Compact)
        );
    }
}
