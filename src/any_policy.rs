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

    /// The most bits per key [`Format::policy`] takes for Bloom filters.
    pub const MAX_BLOOM_SETTING: i32 = 1000;

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

    /// This format's policy at `bits_per_key` as a setting gives it (the drop-in's
    /// `LEVELDB_BLOOM_BITS_PER_KEY`, the command's `--bits-per-key`): for Bloom filters a
    /// whole number from 0 to [`Format::MAX_BLOOM_SETTING`] (LevelDB's policy takes more, but past
    /// it a setting can only be a mistake: 1,000 bits per key is a false-positive rate of
    /// 10^-200), for compact filters any number [`CompactPolicy::new`] takes. Anything else
    /// is [`Error::InvalidBitsPerKey`]; [`Format::settings`] says what is taken.
    ///
    /// ```
    /// use leveldb_bloom::{Error, Format};
    ///
    /// assert_eq!(Format::Bloom.policy(10.0)?.format(), Format::Bloom);
    /// assert_eq!(Format::Bloom.policy(7.5), Err(Error::InvalidBitsPerKey));
    /// assert!(Format::Compact.policy(7.5).is_ok());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn policy(self, bits_per_key: f64) -> Result<AnyPolicy, Error> {
        match self {
            Format::Bloom
                if bits_per_key.fract() == 0.0
                    && (0.0..=f64::from(Format::MAX_BLOOM_SETTING)).contains(&bits_per_key) =>
            {
                BloomPolicy::new(bits_per_key as i32).map(AnyPolicy::Bloom)
            }
            Format::Bloom => Err(Error::InvalidBitsPerKey),
            Format::Compact => CompactPolicy::new(bits_per_key).map(AnyPolicy::Compact),
        }
    }

    /// The bits per key [`Format::policy`] takes, in words for a message: "a whole number
    /// from 0 to 1000", "a number from 0 to 32".
    pub fn settings(self) -> String {
        match self {
            Format::Bloom => format!("a whole number from 0 to {}", Format::MAX_BLOOM_SETTING),
            Format::Compact => format!("a number from 0 to {}", crate::compact::MAX_BITS_PER_KEY),
        }
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

    /// A policy for reading filters of either format: LevelDB's Bloom filters answered
    /// exactly as LevelDB answers them, compact ones by their format (what a compact
    /// policy's queries do, whatever its bits per key).
    pub fn reader() -> AnyPolicy {
        AnyPolicy::Compact(CompactPolicy::new(10.0).expect("10 bits per key is valid"))
    }

    /// Whether a filter of `len` bytes whose last byte is `last` (`None`: empty) has the
    /// length and the trailer this policy gives a filter of `keys` keys: its Bloom filters
    /// end with its probe count; its compact ones with the compact marker, or are all zero
    /// where no compact filter fits in the space.
    pub fn shapes_like(&self, keys: usize, len: usize, last: Option<u8>) -> bool {
        self.filter_len(keys) == Ok(len)
            && match self {
                AnyPolicy::Bloom(bloom) => last == Some(bloom.probes()),
                AnyPolicy::Compact(_) => last == Some(crate::compact::MARKER) || last == Some(0),
            }
    }

    /// The bits per key this policy was made with, in either format (a Bloom policy's are
    /// whole).
    pub fn bits_per_key(&self) -> f64 {
        match self {
            AnyPolicy::Bloom(p) => f64::from(p.bits_per_key()),
            AnyPolicy::Compact(p) => p.bits_per_key(),
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

    /// A setting's bits per key: Bloom whole numbers from 0 to 1000, compact what its policy
    /// takes; the policy made is the format's at those bits.
    #[test]
    fn each_format_takes_its_settings_and_no_other() {
        for (format, taken, refused) in [
            (
                Format::Bloom,
                &[0.0, -0.0, 1.0, 10.0, 1000.0][..],
                &[-1.0, 0.5, 10.5, 1001.0, 1e10, f64::NAN, f64::INFINITY][..],
            ),
            (
                Format::Compact,
                &[0.0, 0.5, 7.25, 10.0, 32.0][..],
                &[-0.5, 32.5, 1000.0, f64::NAN, f64::INFINITY][..],
            ),
        ] {
            for &bits in taken {
                let policy = format.policy(bits).expect("taken");
                assert_eq!(policy.format(), format, "{bits}");
                assert_eq!(policy.bits_per_key(), bits, "{format:?} {bits}");
            }
            for &bits in refused {
                assert_eq!(format.policy(bits), Err(Error::InvalidBitsPerKey), "{bits}");
            }
        }
        assert_eq!(Format::Bloom.settings(), "a whole number from 0 to 1000");
        assert_eq!(Format::Compact.settings(), "a number from 0 to 32");
    }
}
