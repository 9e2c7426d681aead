//! The compact filter format (opt-in): a set of hash fingerprints, Elias-Fano coded, with one
//! bit saved per bucket that holds two or more of them. `docs/compact-format.md` is the
//! specification and the measurements behind the design; this module implements it.
//!
//! A compact filter ends in a marker byte in `32..=255`, which every stock LevelDB reader
//! answers with "may match": a table written with compact filters stays correct (only
//! unfiltered) under LevelDB's own Bloom policy. [`CompactPolicy`] reads both formats:
//! filters ending in `1..=30` (LevelDB's Bloom filters) are answered bit-identically to
//! LevelDB.

use crate::bloom;
use crate::error::Error;
use crate::remainder::Remainder;
use crate::xxh64::xxh64;

/// The smallest marker byte of a compact filter; smaller last bytes are LevelDB's.
pub const MARKER_MIN: u8 = 32;

/// The most low bits a fingerprint can keep (the marker byte has room for 1 to 28).
pub const MAX_LOW_BITS: u32 = 28;

/// The largest bits per key a compact policy accepts: beyond it the 28 low bits are the
/// limit, and the rest of the memory would be padding.
pub const MAX_BITS_PER_KEY: f64 = 32.0;

/// Bucket-count choices per low-bit width (`kappa` in the specification).
const KAPPAS: u32 = 8;

/// The least payload a filter gets, as LevelDB's Bloom filters: 64 bits.
const MIN_PAYLOAD_BITS: f64 = 64.0;

/// The opt-in compact filter policy. Its name is LevelDB's, `leveldb.BuiltinBloomFilter2`,
/// so existing tables keep their (Bloom) filters: it answers them as LevelDB does, and its
/// own filters by their marker byte.
///
/// ```
/// use leveldb_bloom::CompactPolicy;
///
/// let policy = CompactPolicy::new(10.0)?;
/// let mut filter = Vec::new();
/// policy.create_filter(["hello", "world"], &mut filter)?;
/// assert!(policy.key_may_match(b"hello", &filter));
/// assert!(filter.last().is_some_and(|&marker| marker >= 32)); // stock LevelDB: "may match"
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactPolicy {
    bits_per_key: f64,
}

impl CompactPolicy {
    /// Creates the policy. `bits_per_key` may be fractional, from 0 to
    /// [`MAX_BITS_PER_KEY`]; anything else (negative, NaN, infinite, larger) is
    /// [`Error::InvalidBitsPerKey`]. Below about 3 bits per key no fingerprint fits and the
    /// filters answer "may match" for every key.
    pub fn new(bits_per_key: f64) -> Result<Self, Error> {
        if (0.0..=MAX_BITS_PER_KEY).contains(&bits_per_key) {
            Ok(CompactPolicy { bits_per_key })
        } else {
            Err(Error::InvalidBitsPerKey)
        }
    }

    /// The policy whose filters of 50 or more keys have about `fp_rate` false positives
    /// (fewer keys do a little better or worse: see the README's table). `fp_rate` must be
    /// in `(0, 1)` and reachable with [`MAX_BITS_PER_KEY`], else
    /// [`Error::InvalidFalsePositiveRate`].
    ///
    /// Model (measured, `docs/compact-format.md`): `fp = 2^-(bits_per_key - 1.75)`.
    pub fn for_fp_rate(fp_rate: f64) -> Result<Self, Error> {
        if !(fp_rate > 0.0 && fp_rate < 1.0) {
            return Err(Error::InvalidFalsePositiveRate);
        }
        let bits_per_key = (-fp_rate.log2() + OVERHEAD_BITS).max(0.0);
        CompactPolicy::new(bits_per_key).map_err(|_| Error::InvalidFalsePositiveRate)
    }

    /// The bits per key this policy was created with.
    pub fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }

    /// The policy name, `leveldb.BuiltinBloomFilter2` (LevelDB's).
    pub fn name(&self) -> &'static str {
        bloom::NAME
    }

    /// The length in bytes of the filter for `num_keys` keys (duplicates count): the
    /// length of LevelDB's Bloom filter at the same bits per key.
    ///
    /// Format rule: `bits = max(ceil(num_keys * bits_per_key), 64)` (the product in double
    /// precision), rounded up to whole bytes, plus the marker byte.
    ///
    /// ```
    /// let policy = leveldb_bloom::CompactPolicy::new(10.0)?;
    /// assert_eq!(policy.filter_len(100)?, 126); // as BloomPolicy::new(10)
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    pub fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        let bits = (num_keys as f64 * self.bits_per_key)
            .ceil()
            .max(MIN_PAYLOAD_BITS);
        // At most 2^64 * 32 bits: exact enough in u128, and `as` saturates anyway.
        usize::try_from((bits as u128).div_ceil(8))
            .ok()
            .and_then(|bytes| bytes.checked_add(1))
            .ok_or(Error::TooLarge)
    }

    /// Builds the filter for `keys` and **appends** it to `dst`. On error `dst` is
    /// unchanged.
    pub fn create_filter<I>(&self, keys: I, dst: &mut Vec<u8>) -> Result<(), Error>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        let keys = keys.into_iter();
        let len = self.filter_len(keys.len())?;
        dst.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
        let start = dst.len();
        dst.resize(start + len, 0);
        let built = self.write_filter(keys, &mut dst[start..]);
        if built.is_err() {
            dst.truncate(start);
        }
        built
    }

    /// Builds the filter for `keys` into the start of `out` and returns its length. Bytes of
    /// `out` past it are left alone. If `out` is shorter than
    /// [`filter_len`](Self::filter_len), nothing is written and the error says how many bytes
    /// are needed.
    pub fn create_filter_into<I>(&self, keys: I, out: &mut [u8]) -> Result<usize, Error>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        let keys = keys.into_iter();
        let needed = self.filter_len(keys.len())?;
        let Some(out) = out.get_mut(..needed) else {
            return Err(Error::BufferTooSmall { needed });
        };
        out.fill(0);
        self.write_filter(keys, out)?;
        Ok(needed)
    }

    /// Writes the filter for `keys` into `filter`, which is zeroed and exactly
    /// [`filter_len`](Self::filter_len) bytes long. When no fingerprint fits (too few bits
    /// per key) the filter stays all zero: its last byte 0 makes every reader, LevelDB's
    /// included, answer "may match". Only allocation can fail.
    pub(crate) fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        let mut hashes = Vec::new();
        hashes
            .try_reserve_exact(keys.len())
            .map_err(|_| Error::OutOfMemory)?;
        hashes.extend(keys.map(|key| key_hash(key.as_ref())));
        hashes.sort_unstable();
        hashes.dedup();
        let mut scratch = Vec::new();
        // Every bucket's fingerprints are a subset of the keys.
        scratch
            .try_reserve_exact(hashes.len())
            .map_err(|_| Error::OutOfMemory)?;
        let Some((marker, payload)) = filter.split_last_mut() else {
            return Ok(());
        };
        if let Some(layout) = Layout::choose(&hashes, payload.len() as u64 * 8, &mut scratch) {
            layout.encode(&hashes, payload, &mut scratch);
            *marker = layout.marker();
        }
        Ok(())
    }

    /// Whether `key` may be in `filter`: a compact filter by its fingerprints, anything else
    /// exactly as LevelDB's Bloom policy answers.
    pub fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        key_may_match(key, filter)
    }
}

/// The bits per key above `log2(1 / fp)` that compact filters of 50 to 200 keys spend
/// (measured; `docs/compact-format.md`).
const OVERHEAD_BITS: f64 = 1.75;

/// The key hash of the format. Format rule: `XXH64(key, seed 0)`.
pub fn key_hash(key: &[u8]) -> u64 {
    xxh64(key, 0)
}

/// Whether `key` may be in `filter`, read as [`CompactPolicy`] reads it: a filter of 2 or
/// more bytes ending in `32..=255` is compact; any other is answered as LevelDB answers it.
pub fn key_may_match(key: &[u8], filter: &[u8]) -> bool {
    query(key, filter, Remainder::new)
}

/// [`key_may_match`], with the remainder for a Bloom filter's bit count supplied by the
/// caller (the C API's policies cache it).
#[inline]
pub(crate) fn query(key: &[u8], filter: &[u8], remainder: impl FnOnce(u64) -> Remainder) -> bool {
    if is_compact(filter) {
        compact_may_match(key_hash(key), filter)
    } else {
        bloom::query(key, filter, remainder)
    }
}

/// Answers [`key_may_match`] for each of `keys` against one `filter`: `results[i]` for key
/// `i`. Keys past `results.len()` are not read.
pub fn keys_may_match<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    query_batch(keys, filter, results, Remainder::new)
}

/// [`keys_may_match`], with a caller-supplied remainder for a Bloom filter.
pub(crate) fn query_batch<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
    remainder: impl FnOnce(u64) -> Remainder,
) {
    if is_compact(filter) {
        for (result, key) in results.iter_mut().zip(keys) {
            *result = compact_may_match(key_hash(key), filter);
        }
    } else {
        bloom::query_batch(keys, filter, results, remainder);
    }
}

/// Whether `filter` is in the compact format (which LevelDB answers with "may match").
pub fn is_compact(filter: &[u8]) -> bool {
    filter.len() >= 2 && filter[filter.len() - 1] >= MARKER_MIN
}

/// The fingerprint layout of one filter: what the marker byte and the payload size fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// `L`: low bits per fingerprint, 1 to 28.
    low_bits: u32,
    /// `kappa`: which of the bucket counts for this `L`, 0 to 7.
    kappa: u32,
    /// `Z`: the number of buckets.
    buckets: u64,
}

impl Layout {
    /// Format rule: `Z = floor(P * (8 + kappa) / (8 * (L + 2)))` with `P` the payload bits.
    fn new(payload_bits: u64, low_bits: u32, kappa: u32) -> Layout {
        let buckets = u128::from(payload_bits) * u128::from(KAPPAS + kappa)
            / (u128::from(KAPPAS) * u128::from(low_bits + 2));
        Layout {
            low_bits,
            kappa,
            // Z <= P < 2^64.
            buckets: buckets as u64,
        }
    }

    /// Format rule: the marker is `32 + 8 * (L - 1) + kappa`.
    fn from_marker(marker: u8, payload_bits: u64) -> Layout {
        let code = u32::from(marker - MARKER_MIN);
        Layout::new(payload_bits, code / KAPPAS + 1, code % KAPPAS)
    }

    fn marker(&self) -> u8 {
        (u32::from(MARKER_MIN) + KAPPAS * (self.low_bits - 1) + self.kappa) as u8
    }

    fn low_mask(&self) -> u64 {
        (1 << self.low_bits) - 1
    }

    /// Format rule: a fingerprint is `(bucket, low)` with `bucket = (h * Z) >> 64` (the high
    /// 64 bits of the 128-bit product) and `low = h mod 2^L`.
    fn fingerprint(&self, hash: u64) -> (u64, u64) {
        let bucket = ((u128::from(hash) * u128::from(self.buckets)) >> 64) as u64;
        (bucket, hash & self.low_mask())
    }

    /// The layout with the fewest expected false positives (distinct fingerprints over
    /// `Z * 2^L`) whose encoding of `hashes` fits in `payload_bits`, or `None` if none fits.
    ///
    /// Not part of the format (any layout that fits decodes): two widths around the
    /// optimum, for each the most buckets that fit.
    fn choose(hashes: &[u64], payload_bits: u64, scratch: &mut Vec<u64>) -> Option<Layout> {
        let keys = hashes.len().max(1) as u64;
        let mut best: Option<(Layout, u64)> = None;
        // About L + 2.2 bits per key at the optimum; at least 2 when few keys have 64 bits.
        let widest = (payload_bits / keys)
            .saturating_sub(2)
            .clamp(1, MAX_LOW_BITS as u64) as u32;
        for low_bits in (widest.saturating_sub(1).max(1)..=widest).rev() {
            for kappa in (0..KAPPAS).rev() {
                let layout = Layout::new(payload_bits, low_bits, kappa);
                if layout.buckets == 0 {
                    continue;
                }
                let Some(distinct) = layout.fits(hashes, payload_bits, scratch) else {
                    continue;
                };
                let better = best.is_none_or(|(b, b_distinct)| {
                    // Z * 2^L / distinct, compared without division.
                    (u128::from(layout.buckets) << layout.low_bits) * u128::from(b_distinct)
                        > (u128::from(b.buckets) << b.low_bits) * u128::from(distinct)
                });
                if better {
                    best = Some((layout, distinct));
                }
                break;
            }
        }
        best.map(|(layout, _)| layout)
    }

    /// The number of distinct fingerprints if `hashes` fit in `payload_bits` with this
    /// layout: `n + Z` bits of buckets and `n * L - m` bits of low bits, where `m` is the
    /// number of buckets holding two or more.
    fn fits(&self, hashes: &[u64], payload_bits: u64, scratch: &mut Vec<u64>) -> Option<u64> {
        let (mut distinct, mut shared) = (0u64, 0u64);
        self.for_each_bucket(hashes, scratch, |_, lows| {
            distinct += lows.len() as u64;
            shared += u64::from(lows.len() >= 2);
        });
        let high = distinct + self.buckets;
        let low = distinct * u64::from(self.low_bits) - shared;
        (high.checked_add(low)? <= payload_bits).then_some(distinct)
    }

    /// Calls `f(bucket, lows)` for each non-empty bucket in order, with its distinct low bits
    /// ascending. `hashes` are sorted, so buckets come in order.
    fn for_each_bucket(&self, hashes: &[u64], lows: &mut Vec<u64>, mut f: impl FnMut(u64, &[u64])) {
        let mut rest = hashes;
        while let Some(&first) = rest.first() {
            let (bucket, _) = self.fingerprint(first);
            lows.clear();
            let in_bucket = rest
                .iter()
                .take_while(|&&h| self.fingerprint(h).0 == bucket)
                .count();
            // `lows` has room for every hash: reserved by the caller.
            lows.extend(rest[..in_bucket].iter().map(|&h| h & self.low_mask()));
            rest = &rest[in_bucket..];
            if lows.len() > 1 {
                lows.sort_unstable();
                lows.dedup();
            }
            f(bucket, lows);
        }
    }

    /// Writes the buckets and low bits of `hashes` into the zeroed `payload`, which they fit.
    ///
    /// Format rule: fingerprint `i` (in `(bucket, low)` order, duplicates removed) sets bit
    /// `bucket + i` of the payload (bit `j` is bit `j % 8` of byte `j / 8`), so bucket `b`'s
    /// fingerprints are the run of ones after the `b`-th zero. Low bits are stored from the
    /// payload's end backwards, bucket by bucket: one fingerprint takes an `L`-bit field;
    /// the two smallest of a shared bucket one `2L - 1`-bit pair field, the others `L` bits
    /// each.
    fn encode(&self, hashes: &[u64], payload: &mut [u8], scratch: &mut Vec<u64>) {
        let payload_bits = payload.len() as u64 * 8;
        let (mut rank, mut used) = (0u64, 0u64);
        self.for_each_bucket(hashes, scratch, |bucket, lows| {
            for i in 0..lows.len() as u64 {
                set_bit(payload, bucket + rank + i);
            }
            rank += lows.len() as u64;
            let mut put = |width: u32, value: u64| {
                used += u64::from(width);
                write_bits(payload, payload_bits - used, width, value);
            };
            let singles = match lows {
                [_] => lows,
                [a, b, rest @ ..] => {
                    put(2 * self.low_bits - 1, self.encode_pair(*a, *b));
                    rest
                }
                [] => &[],
            };
            for &low in singles {
                put(self.low_bits, low);
            }
        });
    }

    /// Format rule: two distinct lows `a < b` are stored as `x | e << L` with `e < 2^(L-1)`:
    /// `x = a, e = b - a - 1` if `b - a <= 2^(L-1)`, else `x = b, e = a + 2^L - b - 1`. The
    /// pair is `{x, (x + e + 1) mod 2^L}` either way.
    fn encode_pair(&self, a: u64, b: u64) -> u64 {
        let half = 1u64 << (self.low_bits - 1);
        let (x, e) = if b - a <= half {
            (a, b - a - 1)
        } else {
            (b, a + (1 << self.low_bits) - b - 1)
        };
        x | e << self.low_bits
    }
}

/// Whether the fingerprint of `hash` is in the compact `filter` (2+ bytes, marker >= 32).
/// A filter whose structure is broken answers "may match".
fn compact_may_match(hash: u64, filter: &[u8]) -> bool {
    let Some((&marker, payload)) = filter.split_last() else {
        return true;
    };
    let payload_bits = payload.len() as u64 * 8;
    let layout = Layout::from_marker(marker, payload_bits);
    if layout.buckets == 0 {
        // Well formed only empty: no fingerprint has a bucket.
        return false;
    }
    let (bucket, low) = layout.fingerprint(hash);
    let Some((start, shared_before)) = bucket_start(payload, bucket) else {
        return true;
    };
    let Some(count) = ones_from(payload, start) else {
        return true;
    };
    if count == 0 {
        return false;
    }
    let width = u64::from(layout.low_bits);
    let rank = start - bucket;
    // Low bits before this bucket's, from the end; then this bucket's fields.
    let before = rank * width - shared_before;
    let fields = count * width - u64::from(count >= 2);
    // They must lie past this bucket's run of ones and its zero.
    let Some(first) = payload_bits
        .checked_sub(before + fields)
        .filter(|&first| first > start + count)
    else {
        return true;
    };
    let mut end = first + fields;
    let mut take = |w: u32| {
        end -= u64::from(w);
        read_bits(payload, end, w)
    };
    let mut singles = count;
    if count >= 2 {
        let pair = take(2 * layout.low_bits - 1);
        let x = pair & layout.low_mask();
        let other = (x + (pair >> layout.low_bits) + 1) & layout.low_mask();
        if low == x || low == other {
            return true;
        }
        singles -= 2;
    }
    (0..singles).any(|_| take(layout.low_bits) == low)
}

/// Where bucket `bucket`'s run of ones starts (just past the `bucket`-th zero, counting
/// from 1; 0 for bucket 0), and how many buckets before it hold two or more fingerprints
/// (runs of two or more ones). `None` if the payload has too few zeros.
fn bucket_start(payload: &[u8], bucket: u64) -> Option<(u64, u64)> {
    if bucket == 0 {
        return Some((0, 0));
    }
    let mut zeros_left = bucket - 1;
    let (mut shared, mut previous_bit) = (0u64, 0u64);
    for (index, chunk) in payload.chunks(8).enumerate() {
        let word = read_word(chunk);
        let valid = if chunk.len() == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * chunk.len())) - 1
        };
        let next_bit = payload.get(8 * index + 8).map_or(0, |&b| u64::from(b & 1));
        // Bit i starts a run of 2+ ones: bits i and i+1 set, bit i-1 clear.
        let starts = word & (word >> 1 | next_bit << 63) & !(word << 1 | previous_bit);
        let zeros = !word & valid;
        let count = u64::from(zeros.count_ones());
        if zeros_left < count {
            let zero = select(zeros, zeros_left as u32);
            let below = (1u64 << zero) - 1;
            shared += u64::from((starts & below).count_ones());
            return Some((64 * index as u64 + u64::from(zero) + 1, shared));
        }
        zeros_left -= count;
        shared += u64::from(starts.count_ones());
        previous_bit = word >> 63;
    }
    None
}

/// The number of consecutive ones from bit `start`, or `None` if they reach the end.
fn ones_from(payload: &[u8], start: u64) -> Option<u64> {
    let payload_bits = payload.len() as u64 * 8;
    let mut at = start;
    while at < payload_bits {
        let ones = u64::from((!read_bits(payload, at, 56)).trailing_zeros().min(56));
        if ones < 56 {
            return (at + ones < payload_bits).then_some(at + ones - start);
        }
        at += 56;
    }
    None
}

/// The position of the `k`-th (from 0) set bit of `word`, which has more than `k`.
fn select(word: u64, k: u32) -> u32 {
    let (mut word, mut k, mut base) = (word, k, 0);
    loop {
        let in_byte = (word & 0xff).count_ones();
        if k < in_byte {
            break;
        }
        k -= in_byte;
        word >>= 8;
        base += 8;
    }
    let mut byte = word & 0xff;
    for _ in 0..k {
        byte &= byte - 1;
    }
    base + byte.trailing_zeros()
}

/// Up to 8 bytes as a little-endian word, zero-padded.
fn read_word(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let n = bytes.len().min(8);
    word[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(word)
}

/// `width` (at most 56) bits from bit `at`, zero past the end.
fn read_bits(payload: &[u8], at: u64, width: u32) -> u64 {
    let byte = (at / 8) as usize;
    let word = payload.get(byte..).map_or(0, read_word);
    (word >> (at % 8)) & ((1u64 << width) - 1)
}

fn set_bit(payload: &mut [u8], at: u64) {
    payload[(at / 8) as usize] |= 1 << (at % 8);
}

/// ORs `value` (`width` bits, at most 56) into the zeroed bits from `at`.
fn write_bits(payload: &mut [u8], at: u64, width: u32, value: u64) {
    let mut value = value << (at % 8);
    let mut bits = u64::from(width) + at % 8;
    let mut byte = (at / 8) as usize;
    while bits > 0 {
        payload[byte] |= value as u8;
        value >>= 8;
        bits = bits.saturating_sub(8);
        byte += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BloomPolicy;

    /// Deterministic pseudo-random keys (splitmix64), `len` bytes each.
    fn keys(seed: u64, count: usize, len: usize) -> Vec<Vec<u8>> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        (0..count)
            .map(|_| (0..len).map(|_| next() as u8).collect())
            .collect()
    }

    fn false_positive_rates(bits_per_key: u32, keys_per_filter: usize) -> (f64, f64) {
        let compact = CompactPolicy::new(f64::from(bits_per_key)).unwrap();
        let bloom = BloomPolicy::new(bits_per_key as i32).unwrap();
        let filters = 400_000 / keys_per_filter;
        let (mut compact_hits, mut bloom_hits, mut probes) = (0u64, 0u64, 0u64);
        for f in 0..filters {
            let present = keys(f as u64, keys_per_filter, 16);
            let absent = keys(f as u64 + (1 << 40), keys_per_filter.max(50), 16);
            let (mut c, mut b) = (Vec::new(), Vec::new());
            compact.create_filter(&present, &mut c).unwrap();
            bloom.create_filter(&present, &mut b).unwrap();
            assert_eq!(c.len(), b.len());
            for key in &present {
                assert!(compact.key_may_match(key, &c));
            }
            for key in &absent {
                compact_hits += u64::from(compact.key_may_match(key, &c));
                bloom_hits += u64::from(bloom.key_may_match(key, &b));
                probes += 1;
            }
        }
        (
            compact_hits as f64 / probes as f64,
            bloom_hits as f64 / probes as f64,
        )
    }

    #[test]
    #[ignore = "a measurement: cargo test --release -- --ignored --nocapture fp_table"]
    fn fp_table() {
        for bpk in [6, 8, 10, 12, 16] {
            for n in [10, 20, 30, 50, 100, 200, 1000] {
                let (c, b) = false_positive_rates(bpk, n);
                println!(
                    "bpk {bpk:2} n {n:4}: compact {:.3}% bloom {:.3}% ratio {:.2}",
                    100.0 * c,
                    100.0 * b,
                    c / b
                );
            }
        }
    }

    #[test]
    fn no_false_negatives_at_any_size() {
        for bpk in [0.0, 1.0, 2.5, 3.0, 4.0, 6.0, 7.3, 10.0, 16.0, 24.0, 32.0] {
            let policy = CompactPolicy::new(bpk).unwrap();
            for n in (0..70).chain([100, 257, 1000]) {
                let present = keys(n as u64 * 31 + bpk as u64, n, 1 + n % 20);
                let mut filter = Vec::new();
                policy.create_filter(&present, &mut filter).unwrap();
                assert_eq!(filter.len(), policy.filter_len(n).unwrap());
                for key in &present {
                    assert!(policy.key_may_match(key, &filter), "bpk {bpk} n {n}");
                }
            }
        }
    }
}
