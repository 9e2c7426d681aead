//! LevelDB's `leveldb.BuiltinBloomFilter2` policy (`util/bloom.cc`).
//!
//! A filter is a bit array followed by one byte holding the number of probes `k`. Each key
//! sets `k` bits chosen by double hashing from its hash (LevelDB's `util/hash.cc`, with the
//! seed `0xbc9f1d34`). `rules.rs` states the format as LevelDB does, in a few dozen lines;
//! everything here computes the same bits faster, and is tested against it:
//!
//! - `crate::hash`: LevelDB's hash two words a turn (the rule mixes one at a time);
//! - `Remainder`: `h % bits` by a multiply with a reciprocal, exact for every 32-bit `h`
//!   (the rule divides);
//! - `set_bits`, `bits_set`, `halves_set`: the `k` probes unrolled for the common `k`, and a
//!   query's probes in two halves without a branch on each bit (the rule stops at the first
//!   clear bit);
//! - `lanes`: eight keys at a time in AVX2 lanes for creation and batch queries (the rule
//!   takes one key at a time);
//! - `filter_array`: the rule's checks of a filter's length and last byte, once per filter.

use crate::cpu;
use crate::error::Error;
use crate::hash::bloom_hash;
use crate::policy::{FilterPolicy, sealed::WriteFilter};
use crate::remainder::Remainder;

mod lanes;
#[cfg(test)]
mod rules;

/// Probe counts above this are reserved for other encodings: their filters always match.
pub const MAX_PROBES: u8 = 30;

/// The probe counts LevelDB's Bloom filters have: at least one, at most [`MAX_PROBES`].
const PROBES: std::ops::RangeInclusive<u8> = 1..=MAX_PROBES;

/// The bits per key [`BloomPolicy::for_fp_rate`] chooses among.
const FOR_FP_RATE_BITS_PER_KEY: std::ops::RangeInclusive<i32> = 1..=100;

/// The smallest bit array a filter has, however few keys it holds.
const MIN_BITS: u64 = 64;

/// LevelDB's Bloom filter policy for a given number of bits per key.
///
/// Filters it builds are byte-identical to LevelDB 1.23's `NewBloomFilterPolicy(bits_per_key)`
/// and queries answer exactly as LevelDB does, malformed filters included.
///
/// ```
/// use leveldb_bloom::{BloomPolicy, FilterPolicy};
///
/// let policy = BloomPolicy::new(10)?;
/// assert_eq!(policy.probes(), 6);
/// let mut filter = Vec::new();
/// policy.create_filter(["hello", "world"], &mut filter)?;
/// // LevelDB 1.23 builds exactly these 9 bytes (the last one is k).
/// assert_eq!(filter, [0x11, 0x40, 0x00, 0x41, 0x44, 0x10, 0x40, 0x10, 0x06]);
/// assert!(policy.key_may_match(b"hello", &filter));
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomPolicy {
    bits_per_key: u32,
    probes: u8,
}

impl BloomPolicy {
    /// Creates the policy. Format rule: `k = floor(bits_per_key * 0.69)` in double precision,
    /// clamped to `1..=30` ([`MAX_PROBES`]). A negative `bits_per_key` is refused (LevelDB has undefined
    /// behaviour there); 0 is valid and gives one probe into a 64-bit array.
    ///
    /// ```
    /// use leveldb_bloom::{BloomPolicy, Error};
    ///
    /// assert_eq!(BloomPolicy::new(16)?.probes(), 11);
    /// assert_eq!(BloomPolicy::new(-1), Err(Error::NegativeBitsPerKey(-1)));
    /// # Ok::<(), Error>(())
    /// ```
    pub const fn new(bits_per_key: i32) -> Result<Self, Error> {
        if bits_per_key < 0 {
            return Err(Error::NegativeBitsPerKey(bits_per_key));
        }
        // Exact: every i32 is a double. `as` to an integer saturates.
        let probes = (bits_per_key as f64 * 0.69) as u32;
        let probes = if probes < *PROBES.start() as u32 {
            *PROBES.start()
        } else if probes > *PROBES.end() as u32 {
            *PROBES.end()
        } else {
            probes as u8
        };
        Ok(BloomPolicy {
            bits_per_key: bits_per_key as u32,
            probes,
        })
    }

    /// The policy with the fewest bits per key (1 to 100) whose filters are expected to
    /// have at most `fp_rate` false positives, by the standard Bloom model
    /// `(1 - e^(-k / bits_per_key))^k`. LevelDB's filters do somewhat worse than the model
    /// (its hash does not mix the last bytes of a key fully). `fp_rate` must be in `(0, 1)` and
    /// reachable, else [`Error::InvalidFalsePositiveRate`].
    ///
    /// ```
    /// assert_eq!(leveldb_bloom::BloomPolicy::for_fp_rate(0.01)?.bits_per_key(), 10);
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    pub fn for_fp_rate(fp_rate: f64) -> Result<Self, Error> {
        if !(fp_rate > 0.0 && fp_rate < 1.0) {
            return Err(Error::InvalidFalsePositiveRate);
        }
        FOR_FP_RATE_BITS_PER_KEY
            .map(|bits_per_key| BloomPolicy::new(bits_per_key).expect("positive"))
            .find(|policy| policy.modelled_rate() <= fp_rate)
            .ok_or(Error::InvalidFalsePositiveRate)
    }

    /// The bits per key this policy was created with.
    pub fn bits_per_key(&self) -> i32 {
        self.bits_per_key as i32
    }

    /// The number of probes `k` per key, the byte that ends every filter it builds.
    pub fn probes(&self) -> u8 {
        self.probes
    }

    /// The false-positive rate the standard Bloom model expects of this policy's filters
    /// (of more than a few keys, whose arrays are `bits_per_key` bits a key):
    /// `(1 - e^(-k / bits_per_key))^k`. LevelDB's filters do somewhat worse than the model
    /// (`docs/performance-notes.md`).
    ///
    /// ```
    /// let rate = leveldb_bloom::BloomPolicy::new(10)?.modelled_rate();
    /// assert!((0.0084..0.0085).contains(&rate));
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    pub fn modelled_rate(&self) -> f64 {
        modelled_rate(self.probes, 1.0, f64::from(self.bits_per_key))
    }
}

/// The standard Bloom model: `(1 - e^(-k * keys / bits))^k`, the rate of a filter of `bits`
/// bits holding `keys` keys with `probes` probes each.
fn modelled_rate(probes: u8, keys: f64, bits: f64) -> f64 {
    let k = f64::from(probes);
    (1.0 - (-k * keys / bits).exp()).powf(k)
}

impl FilterPolicy for BloomPolicy {
    /// Format rule: `bits = max(num_keys * bits_per_key, 64)`, rounded up to whole bytes,
    /// plus one byte for `k`.
    ///
    /// ```
    /// use leveldb_bloom::{BloomPolicy, FilterPolicy};
    ///
    /// let policy = BloomPolicy::new(10)?;
    /// assert_eq!(policy.filter_len(0)?, 9); // 64 bits + k
    /// assert_eq!(policy.filter_len(100)?, 126); // 1000 bits + k
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        // In 128 bits: the bit count may pass 2^64 while the byte count still fits.
        let bits = (num_keys as u128 * u128::from(self.bits_per_key)).max(u128::from(MIN_BITS));
        usize::try_from(bits.div_ceil(8))
            .ok()
            .and_then(|bytes| bytes.checked_add(1))
            .ok_or(Error::TooLarge)
    }

    /// Answered as LevelDB 1.23 answers, whatever the bytes. The policy that built the
    /// filter does not matter: `k` is read from the filter.
    ///
    /// Format rules: a filter shorter than 2 bytes matches nothing; a last byte `k` of 0 or
    /// above 30 always matches (reserved for other encodings); otherwise the key may match
    /// iff each of its `k` probes into the `(len - 1) * 8` bits finds a set bit.
    ///
    /// ```
    /// use leveldb_bloom::{BloomPolicy, FilterPolicy};
    ///
    /// let policy = BloomPolicy::new(10)?;
    /// assert!(!policy.key_may_match(b"x", b""));          // too short: nothing matches
    /// assert!(policy.key_may_match(b"x", &[0, 0, 0xff])); // reserved encoding: may match
    /// # Ok::<(), leveldb_bloom::Error>(())
    /// ```
    #[inline]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        key_may_match(key, filter)
    }

    /// Faster than one call per key: keys are hashed in groups (eight at a time in AVX2
    /// lanes where the processor has them), so that their hashes overlap.
    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        keys_may_match(cpu::instructions(), keys, filter, results)
    }
}

impl WriteFilter for BloomPolicy {
    /// Sets the probe bits of every key, and the last byte to `k`.
    fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        self.write_filter_at(cpu::instructions(), keys, filter);
        Ok(())
    }
}

impl BloomPolicy {
    /// [`WriteFilter::write_filter`] by the code for `level`.
    fn write_filter_at<I>(&self, level: cpu::Instructions, mut keys: I, filter: &mut [u8])
    where
        I: Iterator,
        I::Item: AsRef<[u8]>,
    {
        let Some((k, array)) = filter.split_last_mut() else {
            return;
        };
        *k = self.probes;
        if array.is_empty() {
            return;
        }
        if lanes::set_in_lanes(level, &mut keys, self.probes, array) {
            return;
        }
        let remainder = Remainder::new(array.len());
        // Hash a group of keys first, then set their bits: the hashes are independent chains
        // of multiplications that the processor overlaps when no stores sit between them.
        let set_group = |array: &mut [u8], starts: &[ProbeStart]| {
            for &start in starts {
                with_probe_count!(self.probes, K => set_bits::<K>(array, remainder, start, self.probes));
            }
        };
        let mut starts = [ProbeStart::default(); HASH_GROUP];
        let mut n = 0;
        for key in keys {
            starts[n] = ProbeStart::of(key.as_ref());
            n += 1;
            if n == HASH_GROUP {
                set_group(array, &starts);
                n = 0;
            }
        }
        set_group(array, &starts[..n]);
    }
}

/// The false-positive rate the standard Bloom model expects of a LevelDB Bloom `filter`
/// holding `keys` keys: `(1 - e^(-k * keys / m))^k` with `m` its bits and `k` its last byte.
/// `None` when the filter is not a Bloom filter LevelDB probes (shorter than 2 bytes, or a
/// last byte outside `1..=30`, [`MAX_PROBES`]). (LevelDB's filters measure somewhat above the
/// model: `docs/performance-notes.md`.)
pub fn expected_false_positive_rate(filter: &[u8], keys: usize) -> Option<f64> {
    let (&k, array) = filter.split_last()?;
    if array.is_empty() || !PROBES.contains(&k) {
        return None;
    }
    Some(modelled_rate(k, keys as f64, array.len() as f64 * 8.0))
}

/// Whether `key` may be in a `leveldb.BuiltinBloomFilter2` filter, answered as LevelDB
/// answers it whatever the filter's bytes (the same answer as any [`BloomPolicy`]'s
/// `key_may_match`: LevelDB's query reads its settings from the filter, not the policy).
/// Always inlined, so that a caller compiled for other instructions (the C library's BMI2
/// query) compiles it with them.
#[inline(always)]
pub fn key_may_match(key: &[u8], filter: &[u8]) -> bool {
    may_match_hashed(ProbeStart::of(key), filter)
}

/// [`key_may_match`] for a key already hashed. The remainder's reciprocal is computed per
/// call: it does not depend on the key, so the processor overlaps its division with the
/// hash.
#[inline(always)]
fn may_match_hashed(start: ProbeStart, filter: &[u8]) -> bool {
    match filter_array(filter) {
        Ok((k, array)) => {
            let remainder = Remainder::new(array.len());
            with_probe_count!(k, K => bits_set::<K>(array, remainder, start, k))
        }
        Err(answer) => answer,
    }
}

/// Sets one key's `k` bits in `array` (the whole filter less its last byte): the lanes'
/// scalar tail.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn set_key_bits(key: &[u8], k: u8, array: &mut [u8]) {
    let remainder = Remainder::new(array.len());
    with_probe_count!(k, K => set_bits::<K>(array, remainder, ProbeStart::of(key), k));
}

/// [`key_may_match`] against a well-formed filter's probe count and bit array: the lanes'
/// scalar tail.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn key_may_match_array(key: &[u8], k: u8, array: &[u8]) -> bool {
    let remainder = Remainder::new(array.len());
    with_probe_count!(k, K => bits_set::<K>(array, remainder, ProbeStart::of(key), k))
}

/// [`key_may_match`] for a key whose hash is `h` (the lanes' tests compare with it).
#[cfg(all(test, target_arch = "x86_64"))]
fn hash_may_match(h: u32, filter: &[u8]) -> bool {
    may_match_hashed(ProbeStart::of_hash(h), filter)
}

/// A filter's probe count and bit array, or the answer every key gets from it (format rules
/// as for [`key_may_match`]).
#[inline]
fn filter_array(filter: &[u8]) -> Result<(u8, &[u8]), bool> {
    match filter.split_last() {
        None => Err(false),
        Some((_, [])) => Err(false),
        Some((&k, _)) if k > MAX_PROBES => Err(true),
        Some((&k, array)) => Ok((k, array)),
    }
}

/// [`key_may_match`] for many keys against one filter: `results[i]` answers `keys[i]`.
/// Keys past `results.len()` are not read; results past the keys are left alone. Faster
/// than one call per key: keys are hashed in groups (in lanes where `level` allows), so
/// their hashes overlap.
pub(crate) fn keys_may_match<'k>(
    level: cpu::Instructions,
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    let mut keys = keys.into_iter();
    let (k, array) = match filter_array(filter) {
        Ok(parts) => parts,
        Err(answer) => {
            results.iter_mut().zip(keys).for_each(|(r, _)| *r = answer);
            return;
        }
    };
    let answered = lanes::answer_in_lanes(level, &mut keys, k, array, results);
    let results = &mut results[answered..];
    let remainder = Remainder::new(array.len());
    let mut starts = [ProbeStart::default(); HASH_GROUP];
    for results in results.chunks_mut(HASH_GROUP) {
        let mut n = 0;
        for (start, key) in starts.iter_mut().zip(keys.by_ref().take(results.len())) {
            *start = ProbeStart::of(key);
            n += 1;
        }
        for (result, &start) in results.iter_mut().zip(&starts[..n]) {
            *result = with_probe_count!(k, K => bits_set::<K>(array, remainder, start, k));
        }
        if n < results.len() {
            break;
        }
    }
}

/// How many keys are hashed before their bits are set.
const HASH_GROUP: usize = 16;

/// Runs `$body` with the const `$k` equal to the probe count when it is one that default
/// settings produce (6 for 10 bits per key, 11 for 16), so that the probe loop unrolls;
/// with 0 (meaning "use the runtime count") otherwise.
macro_rules! with_probe_count {
    ($probes:expr, $k:ident => $body:expr) => {
        match $probes {
            6 => {
                const $k: usize = 6;
                $body
            }
            11 => {
                const $k: usize = 11;
                $body
            }
            _ => {
                const $k: usize = 0;
                $body
            }
        }
    };
}
use with_probe_count;

/// Sets one key's `probes` bits; `K` is the probe count if known at compile time, else 0.
#[inline(always)]
fn set_bits<const K: usize>(array: &mut [u8], remainder: Remainder, start: ProbeStart, probes: u8) {
    let (mut h, delta) = (start.h, start.delta);
    let probes = if K == 0 { usize::from(probes) } else { K };
    for _ in 0..probes {
        let (byte, bit) = remainder.byte_and_bit(h);
        array[byte] |= 1 << bit;
        h = h.wrapping_add(delta);
    }
}

/// Whether all of one key's `probes` bits are set; `K` as for [`set_bits`]. The probes run
/// in two halves, each without a branch on the bits it reads; only between the halves does
/// the query stop if a bit was clear. About half of a filter's bits are set, so most absent
/// keys stop there and pay for half the probes. That branch goes as the answer will, like
/// the one the C API counts answers with: where answers come in no predictable order, it
/// adds little to that one's misses (docs/performance-notes.md).
#[inline(always)]
fn bits_set<const K: usize>(
    array: &[u8],
    remainder: Remainder,
    start: ProbeStart,
    probes: u8,
) -> bool {
    let probes = if K == 0 { usize::from(probes) } else { K };
    // Asked once, not per probe, so that the probe loops have no other branch.
    if remainder.reduces() {
        halves_set::<true>(array, remainder, start, probes)
    } else {
        halves_set::<false>(array, remainder, start, probes)
    }
}

/// [`bits_set`] for an array that [`Remainder::reduces`] (`REDUCES`) or not. A byte past
/// the array (impossible: the remainder is below the bit count) would read as set, so no
/// probe has a panic path to keep in order.
#[inline(always)]
fn halves_set<const REDUCES: bool>(
    array: &[u8],
    remainder: Remainder,
    start: ProbeStart,
    probes: usize,
) -> bool {
    let (mut h, delta) = (start.h, start.delta);
    let first = probes.div_ceil(2);
    // Bit 0 of the AND of every probed byte shifted down to its probe's bit; shifted as a
    // u32, which BMI2 shifts by any register (a byte shift needs the count in CL).
    let mut all_set = 1u32;
    for probe in 0..probes {
        if probe == first && all_set & 1 == 0 {
            return false;
        }
        let (byte, bit) = if REDUCES {
            remainder.reduced_byte_and_bit(h)
        } else {
            remainder.byte_and_bit(h)
        };
        all_set &= array.get(byte).map_or(1, |&byte| u32::from(byte) >> bit);
        h = h.wrapping_add(delta);
    }
    all_set & 1 != 0
}

/// Where a key's probes start and how far apart they are.
///
/// Format rule: `h = hash(key)`, `delta = h.rotate_right(17)`; probe `i` is at `h % bits`,
/// then `h += delta` with 32-bit wrapping. Over an array of 2^32 bits or more the position
/// is `h` itself.
#[derive(Debug, Default, Clone, Copy)]
struct ProbeStart {
    h: u32,
    delta: u32,
}

impl ProbeStart {
    #[inline]
    fn of(key: &[u8]) -> Self {
        Self::of_hash(bloom_hash(key))
    }

    #[inline]
    fn of_hash(h: u32) -> Self {
        ProbeStart {
            h,
            delta: h.rotate_right(17),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn filter(bits_per_key: i32, keys: &[&str]) -> String {
        let mut dst = Vec::new();
        BloomPolicy::new(bits_per_key)
            .unwrap()
            .create_filter(keys, &mut dst)
            .unwrap();
        hex(&dst)
    }

    // Filters LevelDB 1.23 builds for these keys (all but the third are in
    // tests/vectors/leveldb_filters.json, which cpp_tests/vectors_test.cc checks against the
    // real library).
    #[test]
    fn leveldb_filter_vectors() {
        assert_eq!(filter(10, &["hello", "world"]), "114000414410401006");
        assert_eq!(filter(10, &[]), "000000000000000006");
        assert_eq!(filter(10, &["hello"; 7]), "40110000040000410006");
        assert_eq!(filter(0, &["hello", "world"]), "004000000000001001");
    }

    #[test]
    fn probes_follow_the_documented_rule() {
        let k = |bpk| BloomPolicy::new(bpk).unwrap().probes();
        assert_eq!(
            [k(0), k(1), k(2), k(10), k(16), k(43), k(44)],
            [1, 1, 1, 6, 11, 29, 30]
        );
        assert_eq!(k(i32::MAX), 30);
        assert_eq!(BloomPolicy::new(-1), Err(Error::NegativeBitsPerKey(-1)));
    }

    #[test]
    fn create_filter_appends_and_keeps_existing_bytes() {
        let policy = BloomPolicy::new(10).unwrap();
        let mut dst = b"prefix".to_vec();
        policy.create_filter(["hello", "world"], &mut dst).unwrap();
        assert_eq!(&dst[..6], b"prefix");
        assert_eq!(hex(&dst[6..]), "114000414410401006");
    }

    /// A key iterator that claims `len` keys and yields none: sizes are checked before any
    /// key is read.
    struct Claimed(usize);
    impl Iterator for Claimed {
        type Item = &'static [u8];
        fn next(&mut self) -> Option<&'static [u8]> {
            panic!("no key may be read before the size is known to be possible")
        }
    }
    impl ExactSizeIterator for Claimed {
        fn len(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        let policy = BloomPolicy::new(10).unwrap();
        let mut dst = b"kept".to_vec();
        // usize::MAX keys * 10 bits: the byte count itself overflows usize.
        assert_eq!(
            policy.create_filter(Claimed(usize::MAX), &mut dst),
            Err(Error::TooLarge)
        );
        assert_eq!(dst, b"kept");
        // 2^40 keys: a 1.25 TiB filter no allocator provides (a 64-bit size only; Miri
        // stops at an allocation the host cannot make instead of failing it).
        #[cfg(all(target_pointer_width = "64", not(miri)))]
        {
            assert_eq!(
                policy.create_filter(Claimed(1 << 40), &mut dst),
                Err(Error::OutOfMemory)
            );
            assert_eq!(dst, b"kept");
            let mut out = [0u8; 16];
            assert_eq!(
                policy.create_filter_into(Claimed(1 << 40), &mut out),
                Err(Error::BufferTooSmall {
                    needed: (10usize << 40) / 8 + 1
                })
            );
        }
    }

    #[test]
    fn filter_len_overflow_is_an_error() {
        let policy = BloomPolicy::new(i32::MAX).unwrap();
        assert_eq!(policy.filter_len(usize::MAX), Err(Error::TooLarge));
        assert_eq!(
            BloomPolicy::new(8).unwrap().filter_len(usize::MAX),
            Err(Error::TooLarge)
        );
        assert_eq!(BloomPolicy::new(10).unwrap().filter_len(0), Ok(9));
    }

    #[test]
    fn batch_answers_equal_single_answers() {
        let policy = BloomPolicy::new(10).unwrap();
        let keys: Vec<Vec<u8>> = (0..200u32)
            .map(|i| i.to_le_bytes().repeat(1 + i as usize % 5))
            .collect();
        let mut filter = Vec::new();
        policy.create_filter(&keys[..60], &mut filter).unwrap();
        let mut malformed: Vec<Vec<u8>> =
            vec![vec![], vec![6], vec![0, 0], vec![0, 31], vec![0xff; 9]];
        malformed.push(filter.clone());
        for level in cpu::supported() {
            for filter in &malformed {
                // 37 keys: groups of 16 and a partial one. (Under Miri, which interprets
                // each instruction, not 200.)
                for n in [0, 1, 16, 37, 200] {
                    if cfg!(miri) && n == 200 {
                        continue;
                    }
                    let mut results = vec![false; n];
                    let keys = keys[..n].iter().map(Vec::as_slice);
                    keys_may_match(level, keys.clone(), filter, &mut results);
                    let single: Vec<bool> = keys.map(|k| key_may_match(k, filter)).collect();
                    assert_eq!(results, single, "filter {filter:?} n {n} {level:?}");
                }
            }
            let mut short = vec![true; 3];
            keys_may_match(level, keys.iter().map(Vec::as_slice), &filter, &mut short);
            let single: Vec<bool> = keys[..3]
                .iter()
                .map(|k| key_may_match(k, &filter))
                .collect();
            assert_eq!(short, single, "{level:?}");
        }
    }

    #[test]
    fn create_filter_into_writes_only_the_filter() {
        let policy = BloomPolicy::new(10).unwrap();
        let mut out = [0xffu8; 10];
        assert_eq!(
            policy.create_filter_into(["hello", "world"], &mut out),
            Ok(9)
        );
        assert_eq!(hex(&out), "114000414410401006ff");
        let mut short = [0u8; 8];
        assert_eq!(
            policy.create_filter_into(["a"], &mut short),
            Err(Error::BufferTooSmall { needed: 9 })
        );
    }

    /// Filters built key by key by the format rules equal the grouped builder's at every
    /// level, for every count around the hash groups and lanes, and batch answers equal
    /// single ones.
    #[test]
    fn every_group_size_builds_and_answers_alike() {
        let keys: Vec<Vec<u8>> = (0..200u32)
            .map(|i| i.to_le_bytes().repeat(1 + i as usize % 9))
            .collect();
        for level in cpu::supported() {
            for bpk in [1, 10, 16, 37] {
                if cfg!(miri) && bpk == 16 {
                    continue; // Miri interprets each instruction: a sample of the settings
                }
                let policy = BloomPolicy::new(bpk).unwrap();
                for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 24, 63, 200] {
                    if cfg!(miri) && ![0, 1, 9, 17].contains(&n) {
                        continue; // Miri interprets each instruction: a sample of the sizes
                    }
                    let mut filter = vec![0u8; policy.filter_len(n).unwrap()];
                    policy.write_filter_at(level, keys[..n].iter(), &mut filter);
                    // LevelDB's rules, key by key.
                    let slices: Vec<&[u8]> = keys[..n].iter().map(Vec::as_slice).collect();
                    let want = rules::create_filter(&slices, bpk);
                    assert_eq!(filter, want, "bpk {bpk}, {n} keys, {level:?}");
                    for m in [0usize, 3, 8, 13, 16, 200] {
                        if cfg!(miri) && ![3, 13].contains(&m) {
                            continue; // and of the batches
                        }
                        let mut batch = vec![false; m];
                        let keys = keys[..m].iter().map(Vec::as_slice);
                        keys_may_match(level, keys.clone(), &filter, &mut batch);
                        let single: Vec<bool> =
                            keys.map(|key| key_may_match(key, &filter)).collect();
                        assert_eq!(batch, single, "bpk {bpk}, {n} keys, {m} queries");
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_filters_answer_as_leveldb_documents() {
        assert!(!key_may_match(b"x", b""));
        assert!(!key_may_match(b"x", b"\x06"));
        assert!(key_may_match(b"x", &[0, 0, 0]));
        assert!(key_may_match(b"x", &[0, 0, 31]));
        assert!(key_may_match(b"x", &[0, 0, 255]));
        assert!(!key_may_match(b"x", &[0, 0, 1]));
    }
}
