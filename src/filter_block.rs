//! The filter block of a LevelDB table (`table/filter_block.cc`).
//!
//! Layout: the filters one after another, then each filter's start offset as a little-endian
//! u32, then the offset of that array as a u32, then one byte `base_lg` (11). Filter `i`
//! covers the data blocks whose offsets fall in `[i << base_lg, (i + 1) << base_lg)`.

use crate::error::Error;
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
/// let policy = BloomPolicy::new(10)?;
/// let mut builder = FilterBlockBuilder::new(policy);
/// builder.start_block(0)?;
/// builder.add_key(b"foo")?;
/// builder.start_block(5000)?; // the next data block starts at offset 5000
/// builder.add_key(b"bar")?;
/// let block = builder.finish()?.to_vec();
///
/// let reader = FilterBlockReader::new(&policy, &block);
/// assert!(reader.key_may_match(0, b"foo"));
/// assert!(reader.key_may_match(5000, b"bar"));
/// assert!(!reader.key_may_match(2048, b"foo")); // an empty 2 KiB window matches nothing
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FilterBlockBuilder<P> {
    policy: P,
    /// Keys of the open filter, back to back.
    keys: Vec<u8>,
    /// Where each pending key starts in `keys`.
    key_starts: Vec<usize>,
    /// The filters so far; after `finish`, the whole block.
    result: Vec<u8>,
    filter_offsets: Vec<u32>,
    finished: bool,
}

impl<P: FilterPolicy> FilterBlockBuilder<P> {
    /// A builder whose filters `policy` creates.
    pub fn new(policy: P) -> Self {
        FilterBlockBuilder {
            policy,
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
/// included: whatever cannot be decoded answers "may match". Its filters are answered by
/// `policy`, as LevelDB's reader answers with the table's policy.
#[derive(Debug, Clone, Copy)]
pub struct FilterBlockReader<'a, P> {
    policy: &'a P,
    /// The block up to the offset array: filters live here. Empty if the block is malformed.
    filters: &'a [u8],
    /// The offset array, up to and including the array-offset word (`num` entries + 4 bytes).
    offsets: &'a [u8],
    /// How many filters the offset array describes.
    num: usize,
    base_lg: u8,
}

impl<'a, P: FilterPolicy> FilterBlockReader<'a, P> {
    /// Parses `contents`, a whole filter block, whose filters `policy` answers.
    ///
    /// Format rule: a block shorter than 5 bytes, or whose array offset exceeds
    /// `len - 5`, holds no filters (every query may match). The filter count is
    /// `(len - 5 - array_offset) / 4`, rounded down.
    pub fn new(policy: &'a P, contents: &'a [u8]) -> Self {
        let malformed = FilterBlockReader {
            policy,
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
            policy,
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

    /// The index of the filter that covers the data block at `block_offset`.
    ///
    /// Format rule: `block_offset >> base_lg`, `base_lg` being the block's last byte (the
    /// shift count taken modulo 64, as x86 does for LevelDB's unchecked shift).
    pub fn filter_index(&self, block_offset: u64) -> u64 {
        block_offset >> (self.base_lg % 64)
    }

    /// Filter `index`'s bytes, or `None` where LevelDB reads none and every key may match.
    ///
    /// Format rule: an index past the last filter has none. Otherwise filter `index` spans
    /// `[start, limit)` from the offset array; if `start <= limit <= array_offset` those are
    /// its bytes; an empty `start == limit` beyond that is an empty filter (which matches
    /// nothing); anything else has none.
    pub fn filter(&self, index: u64) -> Option<&'a [u8]> {
        let index = usize::try_from(index).ok().filter(|&i| i < self.num)?;
        let start = read_u32(self.offsets, 4 * index) as usize;
        let limit = read_u32(self.offsets, 4 * index + 4) as usize;
        match self.filters.get(start..limit) {
            Some(filter) => Some(filter),
            None if start == limit => Some(&[]),
            None => None,
        }
    }

    /// Whether `key` may be in the data block that starts at `block_offset`: the policy's
    /// answer from the block's [`filter`](Self::filter), or "may match" where it has none.
    #[inline]
    pub fn key_may_match(&self, block_offset: u64, key: &[u8]) -> bool {
        match self.filter(self.filter_index(block_offset)) {
            Some(filter) => self.policy.key_may_match(key, filter),
            None => {
                self.policy.answered_without_filter(1);
                true
            }
        }
    }

    /// [`key_may_match`](Self::key_may_match) for many `(block_offset, key)` queries:
    /// `results[i]` answers query `i`. Queries past `results.len()` are not read. Each run
    /// of queries for one filter is answered by the policy's batch query.
    pub fn keys_may_match<'k>(
        &self,
        queries: impl IntoIterator<Item = (u64, &'k [u8])>,
        results: &mut [bool],
    ) {
        let mut queries = queries.into_iter().peekable();
        let mut answered = 0;
        while answered < results.len() {
            let Some(&(offset, _)) = queries.peek() else {
                return;
            };
            let index = self.filter_index(offset);
            let run = std::iter::from_fn(|| {
                queries.next_if(|&(offset, _)| self.filter_index(offset) == index)
            })
            .map(|(_, key)| key);
            let results = &mut results[answered..];
            let read = match self.filter(index) {
                Some(filter) => {
                    let mut n = 0;
                    let run = run.inspect(|_| n += 1);
                    self.policy.keys_may_match(run, filter, results);
                    n
                }
                None => {
                    let n = results.iter_mut().zip(run).map(|(r, _)| *r = true).count();
                    self.policy.answered_without_filter(n);
                    n
                }
            };
            if read == 0 {
                return; // not for this crate's policies, which read a key per result
            }
            answered += read;
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

    const POLICY: BloomPolicy = match BloomPolicy::new(10) {
        Ok(policy) => policy,
        Err(_) => panic!("10 bits per key is valid"),
    };

    fn builder() -> FilterBlockBuilder<BloomPolicy> {
        FilterBlockBuilder::new(POLICY)
    }

    // A counting policy counts every query a filter block answers for it, those no filter
    // answers ("may match": no filter for the data block) included.
    #[test]
    fn a_counting_policy_counts_queries_no_filter_answers() {
        let counted = crate::Counted::new(POLICY);
        let mut b = FilterBlockBuilder::new(counted.clone());
        b.start_block(0).unwrap();
        b.add_key(b"foo").unwrap();
        let block = b.finish().unwrap().to_vec();
        let reader = FilterBlockReader::new(&counted, &block);
        assert!(reader.key_may_match(0, b"foo"));
        assert!(reader.key_may_match(1 << 40, b"bar"));
        let mut results = [false; 3];
        reader.keys_may_match(
            [(1 << 40, &b"x"[..]), (1 << 41, b"y"), (0, b"foo")],
            &mut results,
        );
        assert_eq!(results, [true; 3]);
        let stats = counted.stats();
        assert_eq!(
            (stats.filters_built, stats.queries, stats.no_match),
            (1, 5, 0)
        );
    }

    // LevelDB's table/filter_block_test.cc, "EmptyBuilder".
    #[test]
    fn empty_builder() {
        let mut b = builder();
        let block = b.finish().unwrap().to_vec();
        assert_eq!(hex(&block), "000000000b");
        let reader = FilterBlockReader::new(&POLICY, &block);
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
        let r = FilterBlockReader::new(&POLICY, &block);
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
            let r = FilterBlockReader::new(&POLICY, block);
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
            assert!(FilterBlockReader::new(&POLICY, block).key_may_match(0, b"k"));
        }
    }
}
