//! The filter block of a LevelDB table (`table/filter_block.cc`).
//!
//! Layout: the filters one after another, then each filter's start offset as a little-endian
//! u32, then the offset of that array as a u32, then one byte `base_lg` (11). Filter `i`
//! covers the data blocks whose offsets fall in `[i << base_lg, (i + 1) << base_lg)`.

use crate::bloom::{self, HASH_GROUP, ProbeStart};
use crate::error::Error;
use crate::filter::FilterFormat;
use crate::policy::FilterPolicy;

/// log2 of the data-block offset window each filter covers: one filter per 2 KiB.
pub const FILTER_BASE_LG: u8 = 11;

const FILTER_BASE: u64 = 1 << FILTER_BASE_LG;

/// Builds a table's filter block as LevelDB's `FilterBlockBuilder` does: call
/// [`start_block`](Self::start_block)`(0)`, then [`add_key`](Self::add_key) for each entry,
/// `start_block(offset)` after each data block, and [`finish`](Self::finish) once.
///
/// ```
/// use leveldb_bloom::{BloomPolicy, FilterBlockBuilder, FilterBlockReader};
///
/// let mut builder = FilterBlockBuilder::new(BloomPolicy::new(10)?);
/// builder.start_block(0)?;
/// builder.add_key(b"foo")?;
/// builder.start_block(5000)?; // the next data block starts at offset 5000
/// builder.add_key(b"bar")?;
/// let block = builder.finish()?.to_vec();
///
/// let reader = FilterBlockReader::new(&block);
/// assert!(reader.key_may_match(0, b"foo"));
/// assert!(reader.key_may_match(5000, b"bar"));
/// assert!(!reader.key_may_match(2048, b"foo")); // an empty 2 KiB window matches nothing
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FilterBlockBuilder {
    policy: FilterPolicy,
    /// Keys of the open filter, back to back.
    keys: Vec<u8>,
    /// Where each pending key starts in `keys`.
    key_starts: Vec<usize>,
    /// The filters so far; after `finish`, the whole block.
    result: Vec<u8>,
    filter_offsets: Vec<u32>,
    finished: bool,
}

impl FilterBlockBuilder {
    /// A builder whose filters `policy` (a [`BloomPolicy`](crate::BloomPolicy), a
    /// [`CompactPolicy`](crate::CompactPolicy) or a [`FilterPolicy`]) creates.
    pub fn new(policy: impl Into<FilterPolicy>) -> Self {
        FilterBlockBuilder {
            policy: policy.into(),
            keys: Vec::new(),
            key_starts: Vec::new(),
            result: Vec::new(),
            filter_offsets: Vec::new(),
            finished: false,
        }
    }

    /// Announces a data block starting at `block_offset`.
    ///
    /// Format rule: with `index = block_offset / 2048`, filters are generated until `index`
    /// exist; the first holds the pending keys, any more are empty. An offset in a window
    /// before the open one is [`Error::OffsetBackwards`] (an assertion in LevelDB); one that
    /// would make the block pass 4 GiB is [`Error::TooLarge`]. Errors change nothing.
    pub fn start_block(&mut self, block_offset: u64) -> Result<(), Error> {
        self.check_open()?;
        let index = block_offset / FILTER_BASE;
        let filters = self.filter_offsets.len() as u64;
        if index < filters {
            return Err(Error::OffsetBackwards {
                block_offset,
                filters: self.filter_offsets.len(),
            });
        }
        // Refuse before changing anything: the block must stay within 4 GiB, its offsets
        // being 32-bit (and each window up to `index` costs 4 bytes of offset array).
        let pending = match self.key_starts.len() {
            0 => 0,
            keys => self.policy.filter_len(keys)? as u64,
        };
        let block_len = self.result.len() as u64 + pending + 4 * (index + 1) + 1;
        if block_len > u64::from(u32::MAX) {
            return Err(Error::TooLarge);
        }
        for _ in filters..index {
            self.generate_filter()?;
        }
        Ok(())
    }

    /// Adds a key to the filter of the current data block.
    pub fn add_key(&mut self, key: &[u8]) -> Result<(), Error> {
        self.check_open()?;
        self.keys
            .try_reserve(key.len())
            .map_err(|_| Error::OutOfMemory)?;
        // Room for this key's start and the end marker `generate_filter` pushes, so that
        // neither push can fail.
        self.key_starts
            .try_reserve(2)
            .map_err(|_| Error::OutOfMemory)?;
        self.key_starts.push(self.keys.len());
        self.keys.extend_from_slice(key);
        Ok(())
    }

    /// Ends the block and returns it. Later calls return the same bytes.
    ///
    /// Format rule: a last filter is generated if keys are pending; then every filter's start
    /// offset (u32 LE), the offset of that array (u32 LE) and the byte 11 are appended.
    pub fn finish(&mut self) -> Result<&[u8], Error> {
        if !self.finished {
            if !self.key_starts.is_empty() {
                self.generate_filter()?;
            }
            let array_offset = self.offset_of_next_filter()?;
            let trailer = 4 * (self.filter_offsets.len() + 1) + 1;
            self.result
                .try_reserve_exact(trailer)
                .map_err(|_| Error::OutOfMemory)?;
            for offset in &self.filter_offsets {
                self.result.extend_from_slice(&offset.to_le_bytes());
            }
            self.result.extend_from_slice(&array_offset.to_le_bytes());
            self.result.push(FILTER_BASE_LG);
            self.finished = true;
        }
        Ok(&self.result)
    }

    /// How many keys wait for the open filter (added since the last filter was generated).
    pub fn pending_keys(&self) -> usize {
        self.key_starts.len()
    }

    fn check_open(&self) -> Result<(), Error> {
        if self.finished {
            Err(Error::AlreadyFinished)
        } else {
            Ok(())
        }
    }

    /// The offset the next filter would start at, which the format stores as a u32.
    fn offset_of_next_filter(&self) -> Result<u32, Error> {
        u32::try_from(self.result.len()).map_err(|_| Error::TooLarge)
    }

    /// Closes the open filter: records its start and, if keys are pending, builds it.
    fn generate_filter(&mut self) -> Result<(), Error> {
        let offset = self.offset_of_next_filter()?;
        self.filter_offsets
            .try_reserve(1)
            .map_err(|_| Error::OutOfMemory)?;
        if !self.key_starts.is_empty() {
            // A final start at the end makes every key a window of two starts (its room
            // was reserved by `add_key`).
            self.key_starts.push(self.keys.len());
            let keys = &self.keys;
            let pending = self.key_starts.windows(2).map(|w| &keys[w[0]..w[1]]);
            let built = self.policy.create_filter(pending, &mut self.result);
            if built.is_err() {
                self.key_starts.pop();
            }
            built?;
            self.keys.clear();
            self.key_starts.clear();
        }
        self.filter_offsets.push(offset);
        Ok(())
    }
}

/// Reads a table's filter block as LevelDB's `FilterBlockReader` does, malformed blocks
/// included: whatever cannot be decoded answers "may match".
#[derive(Debug, Clone, Copy)]
pub struct FilterBlockReader<'a> {
    /// The block up to the offset array: filters live here. Empty if the block is malformed.
    filters: &'a [u8],
    /// The offset array, up to and including the array-offset word (`num` entries + 4 bytes).
    offsets: &'a [u8],
    /// How many filters the offset array describes.
    num: usize,
    base_lg: u8,
}

impl<'a> FilterBlockReader<'a> {
    /// Parses `contents`, a whole filter block.
    ///
    /// Format rule: a block shorter than 5 bytes, or whose array offset exceeds
    /// `len - 5`, holds no filters (every query may match). The filter count is
    /// `(len - 5 - array_offset) / 4`, rounded down.
    pub fn new(contents: &'a [u8]) -> Self {
        let malformed = FilterBlockReader {
            filters: &[],
            offsets: &[],
            num: 0,
            base_lg: 0,
        };
        let Some(trailer_start) = contents.len().checked_sub(5) else {
            return malformed;
        };
        let base_lg = contents[contents.len() - 1];
        let array_offset = read_u32(contents, trailer_start) as usize;
        if array_offset > trailer_start {
            return malformed;
        }
        FilterBlockReader {
            filters: &contents[..array_offset],
            offsets: &contents[array_offset..contents.len() - 1],
            num: (trailer_start - array_offset) / 4,
            base_lg,
        }
    }

    /// How many filters the block holds.
    pub fn num_filters(&self) -> usize {
        self.num
    }

    /// The shift from a data block's offset to its filter's index (the block's last byte).
    pub fn base_lg(&self) -> u8 {
        self.base_lg
    }

    /// Filter `index`'s bytes, or `None` where LevelDB reads none: an index past the last
    /// filter, or offsets that do not fit (see [`key_may_match`](Self::key_may_match)).
    pub fn filter(&self, index: usize) -> Option<&'a [u8]> {
        if index >= self.num {
            return None;
        }
        let start = read_u32(self.offsets, 4 * index) as usize;
        let limit = read_u32(self.offsets, 4 * index + 4) as usize;
        self.filters.get(start..limit)
    }

    /// Whether `key` may be in the data block that starts at `block_offset`.
    ///
    /// Format rule: `index = block_offset >> base_lg` (the shift count taken modulo 64, as
    /// x86 does for LevelDB's unchecked shift); `index >= num` may match. Otherwise filter
    /// `index` spans `[start, limit)` from the offset array; if `start <= limit <=
    /// array_offset` the Bloom filter there answers; an empty `start == limit` beyond that
    /// matches nothing; anything else may match.
    pub fn key_may_match(&self, block_offset: u64, key: &[u8]) -> bool {
        match self.filter_for(block_offset) {
            Ok(filter) => bloom::key_may_match(key, filter),
            Err(answer) => answer,
        }
    }

    /// [`key_may_match`](Self::key_may_match) with the filter read by `policy`: the same
    /// for a Bloom policy; a compact policy also reads its own filters.
    #[inline]
    pub fn key_may_match_with(&self, policy: &FilterPolicy, block_offset: u64, key: &[u8]) -> bool {
        match self.filter_for(block_offset) {
            Ok(filter) => policy.key_may_match(key, filter),
            Err(answer) => answer,
        }
    }

    /// The filter that covers `block_offset`, or the answer every key gets when none
    /// does (format rules as for [`key_may_match`](Self::key_may_match)).
    fn filter_for(&self, block_offset: u64) -> Result<&[u8], bool> {
        let index = block_offset >> (self.base_lg % 64);
        if index >= self.num as u64 {
            return Err(true);
        }
        let index = index as usize;
        let start = read_u32(self.offsets, 4 * index) as usize;
        let limit = read_u32(self.offsets, 4 * index + 4) as usize;
        if start <= limit && limit <= self.filters.len() {
            Ok(&self.filters[start..limit])
        } else {
            Err(start != limit)
        }
    }

    /// [`key_may_match`](Self::key_may_match) for many `(block_offset, key)` queries:
    /// `results[i]` answers query `i`. Queries past `results.len()` are not read. Faster
    /// than one call per query: keys are hashed in groups, so their hashes overlap.
    pub fn keys_may_match<'k>(
        &self,
        queries: impl IntoIterator<Item = (u64, &'k [u8])>,
        results: &mut [bool],
    ) {
        let mut queries = queries.into_iter();
        let mut hashed = [(0u64, ProbeStart::default()); HASH_GROUP];
        for results in results.chunks_mut(HASH_GROUP) {
            let mut n = 0;
            for (slot, (offset, key)) in hashed.iter_mut().zip(queries.by_ref().take(results.len()))
            {
                *slot = (offset, ProbeStart::of(key));
                n += 1;
            }
            for (result, &(offset, start)) in results.iter_mut().zip(&hashed[..n]) {
                *result = match self.filter_for(offset) {
                    Ok(filter) => bloom::may_match_hashed(start, filter),
                    Err(answer) => answer,
                };
            }
            if n < results.len() {
                break;
            }
        }
    }

    /// [`keys_may_match`](Self::keys_may_match) with the filters read by `policy` (see
    /// [`key_may_match_with`](Self::key_may_match_with)).
    pub fn keys_may_match_with<'k>(
        &self,
        policy: &FilterPolicy,
        queries: impl IntoIterator<Item = (u64, &'k [u8])>,
        results: &mut [bool],
    ) {
        match policy {
            FilterPolicy::Bloom(_) => self.keys_may_match(queries, results),
            FilterPolicy::Compact(_) => {
                for (result, (offset, key)) in results.iter_mut().zip(queries) {
                    *result = self.key_may_match_with(policy, offset, key);
                }
            }
        }
    }
}

/// The little-endian u32 at `pos`; the caller has checked that 4 bytes are there.
fn read_u32(bytes: &[u8], pos: usize) -> u32 {
    let word: [u8; 4] = bytes[pos..pos + 4].try_into().expect("4 bytes");
    u32::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BloomPolicy;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn builder() -> FilterBlockBuilder {
        FilterBlockBuilder::new(BloomPolicy::new(10).unwrap())
    }

    // LevelDB's table/filter_block_test.cc, "EmptyBuilder".
    #[test]
    fn empty_builder() {
        let mut b = builder();
        let block = b.finish().unwrap().to_vec();
        assert_eq!(hex(&block), "000000000b");
        let reader = FilterBlockReader::new(&block);
        assert!(reader.key_may_match(0, b"foo"));
        assert!(reader.key_may_match(100000, b"foo"));
    }

    // LevelDB's table/filter_block_test.cc, "MultiChunk", with the real Bloom policy.
    #[test]
    fn multi_chunk() {
        let mut b = builder();
        b.start_block(0).unwrap();
        b.add_key(b"foo").unwrap();
        b.start_block(2000).unwrap();
        b.add_key(b"bar").unwrap();
        b.start_block(3100).unwrap();
        b.add_key(b"box").unwrap();
        b.start_block(9000).unwrap();
        b.add_key(b"box").unwrap();
        b.add_key(b"hello").unwrap();
        let block = b.finish().unwrap().to_vec();
        let r = FilterBlockReader::new(&block);
        assert!(r.key_may_match(0, b"foo") && r.key_may_match(2000, b"bar"));
        assert!(r.key_may_match(3100, b"box"));
        // The empty filters of windows 2 and 3 match nothing.
        assert!(!r.key_may_match(4100, b"foo") && !r.key_may_match(4100, b"box"));
        assert!(!r.key_may_match(6100, b"hello"));
        assert!(r.key_may_match(9000, b"box") && r.key_may_match(9000, b"hello"));
    }

    #[test]
    fn misuse_is_an_error_not_a_corrupt_block() {
        let mut b = builder();
        b.start_block(5000).unwrap();
        assert_eq!(
            b.start_block(4000),
            Err(Error::OffsetBackwards {
                block_offset: 4000,
                filters: 2
            })
        );
        b.start_block(4100).unwrap();
        let first = b.finish().unwrap().to_vec();
        assert_eq!(b.finish().unwrap(), &first[..]);
        assert_eq!(b.add_key(b"x"), Err(Error::AlreadyFinished));
        assert_eq!(b.start_block(1 << 20), Err(Error::AlreadyFinished));
    }

    #[test]
    fn batch_answers_equal_single_answers() {
        let mut b = builder();
        let keys: Vec<Vec<u8>> = (0..100u32).map(|i| i.to_le_bytes().to_vec()).collect();
        for (i, key) in keys.iter().enumerate() {
            b.start_block(i as u64 * 700).unwrap();
            b.add_key(key).unwrap();
        }
        let block = b.finish().unwrap().to_vec();
        for block in [&block[..], &block[..block.len() - 3], b"", &[0xff; 12]] {
            let r = FilterBlockReader::new(block);
            let queries: Vec<(u64, &[u8])> = (0..100)
                .map(|i| ((i as u64 * 997) % 80_000, keys[(i * 7) % 100].as_slice()))
                .collect();
            let mut results = vec![false; queries.len()];
            r.keys_may_match(queries.iter().copied(), &mut results);
            let single: Vec<bool> = queries
                .iter()
                .map(|&(o, k)| r.key_may_match(o, k))
                .collect();
            assert_eq!(results, single);
        }
    }

    #[test]
    fn short_or_inconsistent_blocks_may_match() {
        for block in [&b""[..], b"\0\0\0\x0b", b"\x05\0\0\0\x0b"] {
            assert!(FilterBlockReader::new(block).key_may_match(0, b"k"));
        }
    }
}
