//! The compact filter format (opt-in): a ribbon filter with fractional result bits
//! (`ribbon`), answered in constant time whatever the filter's size, with far fewer false positives
//! than a Bloom filter in the same memory (measured: `docs/benchmarks.md`, "The compact
//! format's gain"). `docs/compact-format.md` is the specification and the measurements
//! behind the design; this module implements it.
//!
//! A compact filter ends in [`MARKER`] (31), which every stock LevelDB reader answers with
//! "may match": a table written with compact filters stays correct (only unfiltered) under
//! LevelDB's own Bloom policy. [`CompactPolicy`] answers every other filter as LevelDB does:
//! LevelDB's Bloom filters (last byte `1..=30`) bit-identically, and any other last byte
//! above 30 with "may match".

mod ribbon;

use crate::bloom;
use crate::cpu;
use crate::error::Error;
use crate::policy::{FilterPolicy, sealed::WriteFilter};
pub use ribbon::MARKER;

/// The largest bits per key a compact policy accepts: beyond it the 32 result bits are the
/// limit, and the rest of the memory would be padding.
pub const MAX_BITS_PER_KEY: f64 = 32.0;

/// The least payload a filter gets, as LevelDB's Bloom filters: 64 bits.
const MIN_PAYLOAD_BITS: f64 = 64.0;

/// The opt-in compact filter policy. Its name is LevelDB's, `leveldb.BuiltinBloomFilter2`,
/// so existing tables keep their (Bloom) filters: it answers them as LevelDB does, and its
/// own filters by their last byte.
///
/// ```
/// use leveldb_bloom::{CompactPolicy, FilterPolicy};
///
/// let policy = CompactPolicy::new(10.0)?;
/// let mut filter = Vec::new();
/// policy.create_filter(["hello", "world"], &mut filter)?;
/// assert!(policy.key_may_match(b"hello", &filter));
/// assert_eq!(filter.last(), Some(&31)); // stock LevelDB: "may match"
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactPolicy {
    bits_per_key: f64,
}

impl CompactPolicy {
    /// Creates the policy. `bits_per_key` may be fractional, from 0 to
    /// [`MAX_BITS_PER_KEY`]; anything else (negative, NaN, infinite, larger) is
    /// [`Error::InvalidBitsPerKey`]. Below about 1.1 bits per key no filter can be built in
    /// the space and the filters answer "may match" for every key.
    pub fn new(bits_per_key: f64) -> Result<Self, Error> {
        if (0.0..=MAX_BITS_PER_KEY).contains(&bits_per_key) {
            Ok(CompactPolicy { bits_per_key })
        } else {
            Err(Error::InvalidBitsPerKey)
        }
    }

    /// The policy with the fewest bits per key (in 64ths) whose filters of
    /// [`FOR_FP_RATE_MIN_KEYS`] to [`FOR_FP_RATE_MAX_KEYS`] keys have at most `fp_rate` false
    /// positives, as the builder's first choice of shape gives them
    /// (`docs/compact-format.md`, "Building"). Smaller filters may get more. `fp_rate` must
    /// be in `(0, 1)` and reachable with [`MAX_BITS_PER_KEY`], else
    /// [`Error::InvalidFalsePositiveRate`].
    ///
    /// ```
    /// use leveldb_bloom::CompactPolicy;
    ///
    /// let bits = CompactPolicy::for_fp_rate(0.01)?.bits_per_key();
    /// assert!(bits > 6.64 && bits < 8.0); // log2(100) = 6.64 is the least any filter needs
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    pub fn for_fp_rate(fp_rate: f64) -> Result<Self, Error> {
        if !(fp_rate > 0.0 && fp_rate < 1.0) {
            return Err(Error::InvalidFalsePositiveRate);
        }
        let holds = |sixty_fourths: u32| {
            let policy = CompactPolicy {
                bits_per_key: f64::from(sixty_fourths) / 64.0,
            };
            rated_sizes().all(|keys| {
                policy
                    .filter_len(keys as usize)
                    .is_ok_and(|len| ribbon::modelled_rate(len, keys) <= fp_rate)
            })
        };
        // The rate falls as the bits per key grow, but not strictly (lengths round to whole
        // bytes): bisect to a setting that holds, then step down while the one below holds.
        let most = (MAX_BITS_PER_KEY * 64.0) as u32;
        if !holds(most) {
            return Err(Error::InvalidFalsePositiveRate);
        }
        let (mut low, mut high) = (0, most);
        while high - low > 1 {
            let middle = (low + high) / 2;
            if holds(middle) {
                high = middle
            } else {
                low = middle
            }
        }
        while high > 0 && holds(high - 1) {
            high -= 1;
        }
        CompactPolicy::new(f64::from(high) / 64.0)
    }

    /// The bits per key this policy was created with.
    pub fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }
}

impl WriteFilter for CompactPolicy {
    /// When no ribbon filter can be solved in the space (too few bits per key) the filter is
    /// all zero: its last byte 0 makes every reader, LevelDB's included, answer "may match".
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
                let hash = ribbon::key_hash(key.as_ref());
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
                &stack[..filled]
            } else {
                &heap[..]
            }
        } else {
            heap.try_reserve_exact(keys.len())
                .map_err(|_| Error::OutOfMemory)?;
            heap.extend(keys.map(|key| ribbon::key_hash(key.as_ref())));
            &heap[..]
        };
        if !ribbon::build(cpu::instructions(), hashes, filter) {
            filter.fill(0);
        }
        Ok(())
    }
}

impl FilterPolicy for CompactPolicy {
    /// The length in bytes of the filter for `num_keys` keys (duplicates count): the
    /// length of LevelDB's Bloom filter at the same bits per key.
    ///
    /// Format rule: `bits = max(ceil(num_keys * bits_per_key), 64)` (the product in double
    /// precision), rounded up to whole bytes, plus one byte.
    ///
    /// ```
    /// use leveldb_bloom::{CompactPolicy, FilterPolicy};
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

    /// Format rule: a filter of 2 or more bytes ending in [`MARKER`] is a ribbon filter;
    /// any other is answered as LevelDB answers it.
    // Always inline: the C API's compact query is this dispatch and the version for the
    // processor, with no call between (`scripts/bench instructions` checks the functions a
    // query runs); with four levels to choose from the compiler would keep it out of line.
    #[inline(always)]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        if !is_compact(filter) {
            return bloom_key_may_match(key, filter);
        }
        match cpu::chosen() {
            Some(level) => ribbon::key_may_match(level, key, filter),
            None => first_key_may_match(key, filter),
        }
    }

    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        let level = cpu::instructions();
        if is_compact(filter) {
            ribbon::keys_may_match(level, keys, filter, results);
        } else {
            bloom::keys_may_match(level, keys, filter, results);
        }
    }
}

// The two answers below are out of line: inlined, their registers (or the processor's
// detection, a call) would give every compact query a stack frame.

/// LevelDB's answer for a filter that is not a ribbon filter.
#[inline(never)]
fn bloom_key_may_match(key: &[u8], filter: &[u8]) -> bool {
    bloom::key_may_match(key, filter)
}

/// A ribbon filter's answer before the processor's level is chosen (the process's first).
#[cold]
#[inline(never)]
fn first_key_may_match(key: &[u8], filter: &[u8]) -> bool {
    ribbon::key_may_match(cpu::instructions(), key, filter)
}

/// The fewest keys a filter holds for [`CompactPolicy::for_fp_rate`]'s rate to hold.
pub const FOR_FP_RATE_MIN_KEYS: u32 = 50;

/// The most keys a filter holds for [`CompactPolicy::for_fp_rate`]'s rate to hold: past
/// them the builder spares more slots than the rate allowed for.
pub const FOR_FP_RATE_MAX_KEYS: u32 = 10_000_000;

/// The filter sizes `for_fp_rate` checks: every size to 1,024 keys (where lengths round
/// most), then steps of about 2% to [`FOR_FP_RATE_MAX_KEYS`].
fn rated_sizes() -> impl Iterator<Item = u64> {
    let max = u64::from(FOR_FP_RATE_MAX_KEYS);
    (u64::from(FOR_FP_RATE_MIN_KEYS)..1024).chain(std::iter::successors(Some(1024), move |&keys| {
        (keys < max).then(|| (keys + keys / 50).min(max))
    }))
}

/// The false-positive rate of compact filters of 1,000 keys built at `bits_per_key`, as the
/// builder's first choice of shape gives them (`docs/compact-format.md`): what a Bloom
/// filter of that size would have as a compact filter. 1 when no filter fits.
pub fn false_positive_rate_at(bits_per_key: f64) -> f64 {
    const KEYS: u64 = 1000;
    match CompactPolicy::new(bits_per_key).and_then(|policy| policy.filter_len(KEYS as usize)) {
        Ok(len) => ribbon::modelled_rate(len, KEYS),
        Err(_) => 1.0,
    }
}

/// The false-positive rate of a compact `filter` on absent keys, `2^-r (1 - f / 2)` with
/// `r` its result bits and `f` the share of keys its extra part holds
/// (`docs/compact-format.md`); `None` if it is not a compact filter or has no slot.
pub fn expected_false_positive_rate(filter: &[u8]) -> Option<f64> {
    if !is_compact(filter) {
        return None;
    }
    ribbon::expected_false_positive_rate(filter)
}

/// Whether `filter` is in the compact format (which LevelDB answers with "may match").
///
/// Format rule: 2 or more bytes, the last [`MARKER`].
#[inline(always)]
pub fn is_compact(filter: &[u8]) -> bool {
    matches!(filter, [_, .., MARKER])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BloomPolicy;

    /// Seeded random keys, `len` bytes each.
    fn keys(seed: u64, count: usize, len: usize) -> Vec<Vec<u8>> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..count)
            .map(|_| std::iter::repeat_with(|| rng.u8(..)).take(len).collect())
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
    /// bit-identical to LevelDB's by the C++ harness; `docs/data/compact-bench.txt` measures
    /// against LevelDB itself): at most 0.4 times Bloom's rate at 10 bits per key, lower at
    /// 6, 8, 12 and 16. Deterministic keys, so the counts cannot flake.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a rate over 60,000 keys a setting; Miri runs the same code in the tests below"
    )]
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
    fn non_compact_filters_are_answered_as_bloom_filters() {
        let compact = CompactPolicy::new(10.0).unwrap();
        let bloom = BloomPolicy::new(10).unwrap();
        // Under Miri, which interprets each instruction, fewer probes.
        let probes = keys(3, if cfg!(miri) { 3 } else { 300 }, 12);
        for len in 0..40usize {
            // Under Miri, which interprets each instruction, every 17th last byte.
            let step = if cfg!(miri) { 17 } else { 1 };
            for last in (0..=255u8).step_by(step).filter(|&last| last != MARKER) {
                let mut filter: Vec<u8> = keys(len as u64, 1, len).remove(0);
                if let Some(byte) = filter.last_mut() {
                    *byte = last;
                }
                assert!(!is_compact(&filter));
                for key in &probes {
                    assert_eq!(
                        compact.key_may_match(key, &filter),
                        bloom.key_may_match(key, &filter),
                        "len {len} last {last}"
                    );
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let policy = CompactPolicy::new(10.0).unwrap();
        // Under Miri, which interprets each instruction, fewer filters and probes.
        let (probe_count, filters) = if cfg!(miri) { (4, 150) } else { (64, 4000) };
        let probes = keys(4, probe_count, 9);
        for (i, filter) in keys(5, filters, 0).iter().enumerate() {
            let mut filter = filter.clone();
            filter.extend(keys(i as u64, 1, i % 300).remove(0));
            if let Some(last) = filter.last_mut() {
                *last = MARKER;
            }
            for key in &probes {
                let _ = policy.key_may_match(key, &filter);
            }
        }
    }

    #[test]
    fn no_false_negatives_at_any_size() {
        for bpk in [0.0, 1.0, 2.5, 3.0, 4.0, 6.0, 7.3, 10.0, 16.0, 24.0, 32.0] {
            if cfg!(miri) && ![0.0, 2.5, 7.3, 16.0, 32.0].contains(&bpk) {
                continue; // Miri interprets each instruction: a sample of the settings
            }
            let policy = CompactPolicy::new(bpk).unwrap();
            for n in (0..70).chain([100, 257, 1000]) {
                if cfg!(miri) && ![0, 1, 7, 30, 100].contains(&n) {
                    continue; // Miri interprets each instruction: a sample of the sizes
                }
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
            if cfg!(miri) && count == 1000 {
                continue; // Miri interprets each instruction: the small counts only
            }
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
