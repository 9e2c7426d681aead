//! The compact filter format (opt-in), in two versions: a ribbon filter (`ribbon`, the one
//! written, answered in constant time whatever the filter's size), and the first version, a
//! set of hash fingerprints, Elias-Fano coded, with one bit saved per bucket that holds two
//! or more of them (still read exactly as before; written only where no ribbon filter can be
//! solved). `docs/compact-format.md` is the specification and the measurements behind the
//! design; this module implements it.
//!
//! A compact filter ends in a marker byte in `31..=255`, which every stock LevelDB reader
//! answers with "may match": a table written with compact filters stays correct (only
//! unfiltered) under LevelDB's own Bloom policy. [`CompactPolicy`] reads both formats:
//! filters ending in `1..=30` (LevelDB's Bloom filters) are answered bit-identically to
//! LevelDB.

mod build;
mod cpu;
mod layout;
mod query;
mod ribbon;

use crate::bloom;
use crate::error::Error;
use crate::filter::{FilterFormat, sealed::WriteFilter};
use layout::{FIRST_VERSION_MARKER_MIN, Layout};
pub use layout::{MAX_LOW_BITS, key_hash};
pub use ribbon::RIBBON_MARKER;

/// The smallest last byte of a compact filter of either version (the second version's
/// marker); smaller last bytes are LevelDB's.
pub const MARKER_MIN: u8 = RIBBON_MARKER;

/// The largest bits per key a compact policy accepts: beyond it the 28 low bits are the
/// limit, and the rest of the memory would be padding.
pub const MAX_BITS_PER_KEY: f64 = 32.0;

/// The least payload a filter gets, as LevelDB's Bloom filters: 64 bits.
const MIN_PAYLOAD_BITS: f64 = 64.0;

/// The opt-in compact filter policy. Its name is LevelDB's, `leveldb.BuiltinBloomFilter2`,
/// so existing tables keep their (Bloom) filters: it answers them as LevelDB does, and its
/// own filters by their marker byte.
///
/// ```
/// use leveldb_bloom::{CompactPolicy, FilterFormat};
///
/// let policy = CompactPolicy::new(10.0)?;
/// let mut filter = Vec::new();
/// policy.create_filter(["hello", "world"], &mut filter)?;
/// assert!(policy.key_may_match(b"hello", &filter));
/// assert_eq!(filter.last(), Some(&31)); // a ribbon filter; stock LevelDB: "may match"
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactPolicy {
    bits_per_key: f64,
}

impl CompactPolicy {
    /// Creates the policy. `bits_per_key` may be fractional, from 0 to
    /// [`MAX_BITS_PER_KEY`]; anything else (negative, NaN, infinite, larger) is
    /// [`Error::InvalidBitsPerKey`]. Below about 1.2 bits per key no filter can be built in
    /// the space and the filters answer "may match" for every key.
    pub fn new(bits_per_key: f64) -> Result<Self, Error> {
        if (0.0..=MAX_BITS_PER_KEY).contains(&bits_per_key) {
            Ok(CompactPolicy { bits_per_key })
        } else {
            Err(Error::InvalidBitsPerKey)
        }
    }

    /// The policy with the fewest bits per key whose filters of [`FOR_FP_RATE_MIN_KEYS`] or
    /// more keys have at most `fp_rate` false positives: `r = ceil(log2(1 / fp_rate))` result
    /// bits, which take `13/12 r + (r + 8) / 50` bits per key (`docs/compact-format.md`).
    /// Smaller filters may get fewer result bits (twice the rate for each one less).
    /// `fp_rate` must be in `(0, 1)` and reachable with [`MAX_BITS_PER_KEY`] (at least
    /// `2^-28`), else [`Error::InvalidFalsePositiveRate`].
    ///
    /// ```
    /// use leveldb_bloom::CompactPolicy;
    ///
    /// // 1% asks for 7 result bits (0.78%): 7.88 bits per key.
    /// let bits = CompactPolicy::for_fp_rate(0.01)?.bits_per_key();
    /// assert!((bits - 7.8833).abs() < 1e-3);
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    pub fn for_fp_rate(fp_rate: f64) -> Result<Self, Error> {
        if !(fp_rate > 0.0 && fp_rate < 1.0) {
            return Err(Error::InvalidFalsePositiveRate);
        }
        // At most 1074 (the least positive double), which `as` keeps exact.
        let result_bits = -fp_rate.log2().floor() as u32;
        let bits_per_key = ribbon::bits_per_key_for(result_bits, FOR_FP_RATE_MIN_KEYS);
        CompactPolicy::new(bits_per_key).map_err(|_| Error::InvalidFalsePositiveRate)
    }

    /// The bits per key this policy was created with.
    pub fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }
}

impl WriteFilter for CompactPolicy {
    /// When no filter fits (too few bits per key) it stays all zero: its last byte 0 makes
    /// every reader, LevelDB's included, answer "may match".
    fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        // Up to 64 keys (most filters) hash into the stack, more into the heap.
        let mut stack = [0u64; 64];
        let mut heap = Vec::new();
        let hashes = if keys.len() <= stack.len() {
            let mut filled = 0;
            for key in keys {
                let hash = key_hash(key.as_ref());
                match stack.get_mut(filled) {
                    Some(slot) => *slot = hash,
                    // An iterator longer than it said: move everything to the heap.
                    None => {
                        if heap.is_empty() {
                            heap.try_reserve(2 * stack.len())
                                .map_err(|_| Error::OutOfMemory)?;
                            heap.extend_from_slice(&stack);
                        }
                        heap.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
                        heap.push(hash);
                    }
                }
                filled += 1;
            }
            if heap.is_empty() {
                &mut stack[..filled]
            } else {
                &mut heap[..]
            }
        } else {
            heap.try_reserve_exact(keys.len())
                .map_err(|_| Error::OutOfMemory)?;
            heap.extend(keys.map(|key| key_hash(key.as_ref())));
            &mut heap[..]
        };
        if cpu::build_ribbon(hashes, filter) {
            return Ok(());
        }
        build::sort_hashes(hashes)?;
        let hashes = build::dedup(hashes);
        let Some((marker, payload)) = filter.split_last_mut() else {
            return Ok(());
        };
        if let Some(layout) = Layout::choose(hashes, payload.len() as u64 * 8) {
            layout.encode(hashes, payload)?;
            *marker = layout.marker();
        }
        Ok(())
    }
}

impl FilterFormat for CompactPolicy {
    /// The length in bytes of the filter for `num_keys` keys (duplicates count): the
    /// length of LevelDB's Bloom filter at the same bits per key.
    ///
    /// Format rule: `bits = max(ceil(num_keys * bits_per_key), 64)` (the product in double
    /// precision), rounded up to whole bytes, plus the marker byte.
    ///
    /// ```
    /// use leveldb_bloom::{CompactPolicy, FilterFormat};
    ///
    /// let policy = CompactPolicy::new(10.0)?;
    /// assert_eq!(policy.filter_len(100)?, 126); // as BloomPolicy::new(10)
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        let bits = (num_keys as f64 * self.bits_per_key)
            .ceil()
            .max(MIN_PAYLOAD_BITS);
        // At most 2^64 * 32 bits: exact enough in u128, and `as` saturates anyway.
        usize::try_from((bits as u128).div_ceil(8))
            .ok()
            .and_then(|bytes| bytes.checked_add(1))
            .ok_or(Error::TooLarge)
    }

    crate::filter::queries_by_module_functions!();
}

/// The fewest keys a filter holds for [`CompactPolicy::for_fp_rate`]'s rate to hold.
pub const FOR_FP_RATE_MIN_KEYS: u32 = 50;

/// The false-positive rate of compact filters of many keys built at `bits_per_key`:
/// `2^-r` with `r = floor(12/13 bits_per_key)` result bits (`docs/compact-format.md`); 1 when
/// no filter fits.
pub fn false_positive_rate_at(bits_per_key: f64) -> f64 {
    match ribbon::result_bits_at(bits_per_key) {
        0 => 1.0,
        r => (-f64::from(r)).exp2(),
    }
}

/// Whether `key` may be in `filter`, read as [`CompactPolicy`] reads it: a filter of 2 or
/// more bytes ending in `31` is a ribbon filter (the format's second version), one ending in
/// `32..=255` is of the first version; any other is answered as LevelDB answers it.
#[inline]
pub fn key_may_match(key: &[u8], filter: &[u8]) -> bool {
    match version(filter) {
        Some(Version::Ribbon) => cpu::ribbon_may_match(key, filter),
        Some(Version::EliasFano) => cpu::may_match(key, filter),
        None => bloom::key_may_match(key, filter),
    }
}

/// Answers [`key_may_match`] for each of `keys` against one `filter`: `results[i]` for key
/// `i`. Keys past `results.len()` are not read.
pub fn keys_may_match<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    match version(filter) {
        Some(Version::Ribbon) => {
            for (result, key) in results.iter_mut().zip(keys) {
                *result = cpu::ribbon_may_match(key, filter);
            }
        }
        Some(Version::EliasFano) => {
            for (result, key) in results.iter_mut().zip(keys) {
                *result = cpu::may_match(key, filter);
            }
        }
        None => bloom::keys_may_match(keys, filter, results),
    }
}

/// The false-positive rate a compact `filter` holding `keys` distinct keys has on absent
/// keys (`docs/compact-format.md`): `2^-r` for a ribbon filter whatever `keys`,
/// `keys / (Z * 2^L)` for one of the first version; `None` if it is not a compact filter or
/// has no slot or bucket.
pub fn expected_false_positive_rate(filter: &[u8], keys: usize) -> Option<f64> {
    match version(filter)? {
        Version::Ribbon => return ribbon::expected_false_positive_rate(filter),
        Version::EliasFano => {}
    }
    let (&marker, payload) = filter.split_last()?;
    let layout = Layout::from_marker(marker, payload.len() as u64 * 8);
    (layout.buckets > 0)
        .then(|| (keys as f64 / (layout.buckets as f64 * (layout.low_bits as f64).exp2())).min(1.0))
}

/// Whether `filter` is in the compact format, either version (which LevelDB answers with
/// "may match").
pub fn is_compact(filter: &[u8]) -> bool {
    version(filter).is_some()
}

/// The two versions of the compact format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    /// Markers `32..=255`: fingerprints, Elias-Fano coded (no longer written unless a ribbon
    /// filter cannot be solved).
    EliasFano,
    /// Marker `31`: a ribbon filter.
    Ribbon,
}

/// Format rule: a filter of 2 or more bytes is compact when its last byte is 31 or more.
#[inline(always)]
fn version(filter: &[u8]) -> Option<Version> {
    match filter {
        [_, .., RIBBON_MARKER] => Some(Version::Ribbon),
        [_, .., marker] if *marker >= FIRST_VERSION_MARKER_MIN => Some(Version::EliasFano),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BloomPolicy;

    /// Deterministic pseudo-random keys (splitmix64), `len` bytes each.
    pub(super) fn keys(seed: u64, count: usize, len: usize) -> Vec<Vec<u8>> {
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
        let filters = 60_000 / keys_per_filter;
        let (mut compact_hits, mut bloom_hits, mut probes) = (0u64, 0u64, 0u64);
        for f in 0..filters {
            let present = keys(f as u64, keys_per_filter, 16);
            let absent = keys(f as u64 + (1 << 40), 8 * keys_per_filter.max(20), 16);
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

    /// The issue's false-positive targets, against this library's Bloom filter (proven
    /// bit-identical to LevelDB's by the C++ harness; `docs/compact-bench.txt` measures
    /// against LevelDB itself): at most 0.4 times Bloom's rate at 10 bits per key, lower at
    /// 6, 8, 12 and 16. Deterministic keys, so the counts cannot flake.
    #[test]
    fn false_positives_beat_bloom_at_equal_memory() {
        for bits_per_key in [6, 8, 10, 12, 16] {
            for keys_per_filter in [10, 50, 200] {
                let (compact, bloom) = false_positive_rates(bits_per_key, keys_per_filter);
                let limit = if bits_per_key == 10 { 0.4 } else { 1.0 };
                assert!(
                    compact < limit * bloom,
                    "{bits_per_key} bits/key, {keys_per_filter} keys: compact {compact} bloom {bloom}"
                );
            }
        }
    }

    #[test]
    fn non_compact_filters_are_answered_as_leveldb_answers() {
        let probes = keys(3, 300, 12);
        for len in 0..40usize {
            for last in (0..32u8).chain([32, 100, 255]) {
                let mut filter: Vec<u8> = keys(len as u64, 1, len).remove(0);
                if let Some(byte) = filter.last_mut() {
                    *byte = last;
                }
                for key in &probes {
                    let ours = key_may_match(key, &filter);
                    if is_compact(&filter) {
                        continue; // decoded as compact: only "no panic" is asked here
                    }
                    assert_eq!(
                        ours,
                        crate::key_may_match(key, &filter),
                        "len {len} last {last}"
                    );
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let probes = keys(4, 64, 9);
        for (i, filter) in keys(5, 4000, 0).iter().enumerate() {
            let mut filter = filter.clone();
            filter.extend(keys(i as u64, 1, i % 300).remove(0));
            if let Some(last) = filter.last_mut() {
                *last |= 0x20;
            }
            for key in &probes {
                let _ = key_may_match(key, &filter);
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

    /// An iterator whose `len` says fewer keys than it yields (a bug of the caller's): every
    /// key is still hashed (the ones past the stack spill to the heap) and none is missed.
    #[test]
    fn iterator_longer_than_it_says_loses_no_key() {
        struct Lying(std::vec::IntoIter<Vec<u8>>);
        impl Iterator for Lying {
            type Item = Vec<u8>;
            fn next(&mut self) -> Option<Vec<u8>> {
                self.0.next()
            }
        }
        impl ExactSizeIterator for Lying {
            fn len(&self) -> usize {
                60
            }
        }
        let policy = CompactPolicy::new(16.0).unwrap();
        for count in [60, 64, 65, 100, 1000] {
            let present = keys(count as u64, count, 8);
            let mut filter = vec![0; policy.filter_len(60).unwrap()];
            policy
                .write_filter(Lying(present.clone().into_iter()), &mut filter)
                .unwrap();
            for key in &present {
                assert!(policy.key_may_match(key, &filter), "{count} keys");
            }
        }
    }
}
