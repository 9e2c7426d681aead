//! What every filter policy does, as LevelDB's `leveldb::FilterPolicy` says it (its name,
//! `CreateFilter`, `KeyMayMatch`), with the sizes and batch queries a C caller needs.
//! [`BloomPolicy`](crate::BloomPolicy) and [`CompactPolicy`](crate::CompactPolicy) implement
//! it, and [`Counted`](crate::Counted) wraps either to count what it does.

use crate::error::Error;

/// The policy name LevelDB stores in a table's metaindex (`"filter." + NAME`), the same for
/// every format: a compact policy keeps reading existing tables' Bloom filters.
pub const NAME: &str = "leveldb.BuiltinBloomFilter2";

/// The filter to store when none can be built (a size that overflows): its last byte, 0,
/// makes every LevelDB reader (and both of this crate's formats) answer "may match", so the
/// table stays correct, only unfiltered. An empty filter would answer "no match" for every
/// key.
pub const MATCH_ALL_FILTER: [u8; 2] = [0, 0];

/// The filter-building step each format supplies. Sealed: only this crate's formats exist,
/// so every filter built is exactly `filter_len` bytes, as the C library relies on.
pub(crate) mod sealed {
    use crate::error::Error;

    pub trait WriteFilter {
        /// Writes the filter for `keys` into `filter`, which is zeroed and exactly
        /// `filter_len(keys.len())` bytes long. Only allocation can fail.
        fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
        where
            I: ExactSizeIterator,
            I::Item: AsRef<[u8]>;

        /// Told of `answers` queries a filter block answered "may match" for this policy
        /// without asking it (no filter for their data block): a counting policy counts
        /// them, as queries it answered.
        #[inline]
        fn answered_without_filter(&self, _answers: usize) {}
    }
}

/// A filter policy: how long the filter for `n` keys is, how it is built, how it answers.
///
/// ```
/// use leveldb_bloom::{BloomPolicy, FilterPolicy};
///
/// let policy = BloomPolicy::new(10)?;
/// let mut filter = Vec::new();
/// policy.create_filter(["hello", "world"], &mut filter)?;
/// assert_eq!(filter.len(), policy.filter_len(2)?);
/// assert!(policy.key_may_match(b"hello", &filter));
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
pub trait FilterPolicy: sealed::WriteFilter {
    /// The length in bytes of the filter for `num_keys` keys (duplicates count). A size that
    /// overflows `usize` is [`Error::TooLarge`].
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error>;

    /// Whether `key` may be in `filter`, whatever the filter's bytes: `false` only when the
    /// key is certainly absent.
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool;

    /// [`key_may_match`](Self::key_may_match) for many keys against one `filter`:
    /// `results[i]` answers key `i`. Keys past `results.len()` are not read; results past
    /// the keys are left alone.
    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    );

    /// The policy name, [`NAME`], for every format.
    fn name(&self) -> &'static str {
        NAME
    }

    /// Builds the filter for `keys` and **appends** it to `dst`, as LevelDB's `CreateFilter`
    /// does. On error `dst` is unchanged.
    fn create_filter<I>(&self, keys: I, dst: &mut Vec<u8>) -> Result<(), Error>
    where
        I: IntoIterator<IntoIter: ExactSizeIterator, Item: AsRef<[u8]>>,
    {
        let keys = keys.into_iter();
        let len = self.filter_len(keys.len())?;
        dst.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
        let start = dst.len();
        dst.resize(start + len, 0);
        let written = self.write_filter(keys, &mut dst[start..]);
        if written.is_err() {
            dst.truncate(start);
        }
        written
    }

    /// Builds the filter for `keys` into the start of `out` and returns its length, for
    /// callers that bring their own memory. Every byte of the filter is written; bytes of
    /// `out` past it are left alone. If `out` is shorter than
    /// [`filter_len`](Self::filter_len), nothing is written and the error says how many
    /// bytes are needed.
    fn create_filter_into<I>(&self, keys: I, out: &mut [u8]) -> Result<usize, Error>
    where
        I: IntoIterator<IntoIter: ExactSizeIterator, Item: AsRef<[u8]>>,
    {
        let keys = keys.into_iter();
        let needed = self.filter_len(keys.len())?;
        let Some(filter) = out.get_mut(..needed) else {
            return Err(Error::BufferTooSmall { needed });
        };
        filter.fill(0);
        self.write_filter(keys, filter)?;
        Ok(needed)
    }
}
