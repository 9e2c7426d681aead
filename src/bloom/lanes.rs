//! Filter creation and batch queries eight keys at a time in AVX2 lanes, where the
//! processor has AVX2.
//!
//! The format is LevelDB's, unchanged: each lane runs exactly the scalar rules of
//! [`super::key_may_match`]. What differs is how the probe position `h % bits` is found.
//! With `bits = 8 * bytes`, `h % bits = 8 * ((h >> 3) % bytes) + (h & 7)`, and for the
//! 29-bit `x = h >> 3` the quotient `x / bytes` is `(x * c) >> f` with
//! `f = 29 + ceil(log2(bytes))` and `c = ceil(2^f / bytes)` (exact for every `x < 2^29`
//! because `c * bytes - 2^f < bytes <= 2^(f - 29)`: Lemire, Kaser and Kurz 2019, theorem 1).
//! `c` is below 2^31 and `x * c` below 2^60, so one 32 x 32 -> 64-bit lane multiply finds it.
//! Each probe's word is gathered from inside the array (never past its last 4 bytes) and
//! shifted to the probe's bit.
//!
//! Arrays under 4 bytes or of 2^32 bits or more, and levels below [`Instructions::has_avx2`]
//! (`crate::cpu`), take the scalar path.

#![allow(unsafe_code)] // AVX2 versions of creation and the batch query, chosen at run time

use crate::cpu::Instructions;

/// Keys answered together.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) const LANES: usize = 8;

/// `x / bytes` for every 29-bit `x`, by a multiplication and a shift (the module's rule).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub(super) struct LaneDivisor {
    bytes: u32,
    c: u32,
    f: u32,
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl LaneDivisor {
    /// For an array of `bytes` bytes, when the lanes can answer it: `4 <= bytes < 2^29`.
    pub(super) fn new(bytes: usize) -> Option<Self> {
        let table = crate::remainder::tabled_reciprocal(bytes);
        let bytes = u32::try_from(bytes)
            .ok()
            .filter(|b| (4..1 << 29).contains(b))?;
        let f = 29 + (u32::BITS - (bytes - 1).leading_zeros());
        // `ceil(2^f / bytes)` is `ceil(ceil(2^64 / (8 * bytes)) / 2^(61 - f))`: from the Bloom
        // query's table of reciprocals, without a division, where it has the size.
        let c = match table {
            Some(m) => (m >> (61 - f)) + u64::from(m & ((1 << (61 - f)) - 1) != 0),
            None => (1u64 << f).div_ceil(u64::from(bytes)),
        };
        Some(LaneDivisor {
            bytes,
            c: u32::try_from(c).ok()?,
            f,
        })
    }

    /// The byte and bit of `h % (8 * bytes)`, by the lanes' arithmetic (the scalar model
    /// the tests hold the vector code to).
    #[cfg(test)]
    fn byte_and_bit(self, h: u32) -> (u32, u32) {
        let x = h >> 3;
        let q = ((u64::from(x) * u64::from(self.c)) >> self.f) as u32;
        (x - q * self.bytes, h & 7)
    }
}

/// Answers the keys for `results` (fewer if `keys` ends first), when `level` and `array`
/// allow it; returns how many results it wrote (0 when the caller must answer them all).
/// `k` and `array` are a well-formed filter's (`super::filter_array`).
#[inline]
pub(super) fn answer_in_lanes<'k>(
    level: Instructions,
    keys: &mut impl Iterator<Item = &'k [u8]>,
    k: u8,
    array: &[u8],
    results: &mut [bool],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if results.len() >= LANES
        && level.has_avx2()
        && let Some(divisor) = LaneDivisor::new(array.len())
    {
        // SAFETY: `level` says the processor has AVX2.
        return unsafe { x86::answer(keys, k, array, divisor, results) };
    }
    let _ = (level, keys, k, array, results);
    0
}

/// Sets the probe bits of every key in `keys`, hashing and placing eight at a time, when
/// `level` and `array` allow it; returns `false`, having read no key, when the caller must
/// set them all.
#[inline]
pub(super) fn set_in_lanes<I>(level: Instructions, keys: &mut I, k: u8, array: &mut [u8]) -> bool
where
    I: Iterator,
    I::Item: AsRef<[u8]>,
{
    #[cfg(target_arch = "x86_64")]
    if level.has_avx2()
        && let Some(divisor) = LaneDivisor::new(array.len())
    {
        // SAFETY: `level` says the processor has AVX2; `divisor` is the array's.
        unsafe { x86::set(keys, k, array, divisor) };
        return true;
    }
    let _ = (level, keys, k, array);
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{LANES, LaneDivisor};
    use crate::hash::{BLOOM_HASH_SEED, M, bloom_hash};

    /// [`super::answer_in_lanes`] once the lanes may run.
    ///
    /// # Safety
    /// The processor has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn answer<'k>(
        keys: &mut impl Iterator<Item = &'k [u8]>,
        k: u8,
        array: &[u8],
        divisor: LaneDivisor,
        results: &mut [bool],
    ) -> usize {
        let mut done = 0;
        for group_results in results.chunks_mut(LANES) {
            let mut group: [&[u8]; LANES] = [&[]; LANES];
            let mut n = 0;
            for (slot, key) in group
                .iter_mut()
                .zip(keys.by_ref().take(group_results.len()))
            {
                *slot = key;
                n += 1;
            }
            if n <= SCALAR_TAIL {
                for (result, key) in group_results.iter_mut().zip(&group[..n]) {
                    *result = super::super::key_may_match_array(key, k, array);
                }
                return done + n;
            }
            fill_group(&mut group, n);
            let all_set = probes_all_set(hash_group(&group), k, array, divisor);
            for (lane, result) in group_results[..n].iter_mut().enumerate() {
                *result = all_set >> lane & 1 != 0;
            }
            done += n;
            if n < LANES {
                break;
            }
        }
        done
    }

    /// A group of this many keys or fewer (the last of a filter or a batch) is answered by
    /// the scalar code: below it, a group in lanes costs more than its keys do one by one
    /// (`docs/performance-notes.md`).
    const SCALAR_TAIL: usize = 2;

    /// Fills the lanes past the first `n` keys of a group with its first key: a partial
    /// group of more than [`SCALAR_TAIL`] keys runs in lanes too. (The copies' answers are
    /// dropped, and setting a key's bits twice changes nothing.)
    fn fill_group(group: &mut [&[u8]; LANES], n: usize) {
        let first = group[0];
        group[n..].fill(first);
    }

    /// [`super::set_in_lanes`] once the lanes may run.
    ///
    /// # Safety
    /// The processor has AVX2, and `divisor` is `LaneDivisor::new(array.len())`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn set<I>(keys: &mut I, k: u8, array: &mut [u8], divisor: LaneDivisor)
    where
        I: Iterator,
        I::Item: AsRef<[u8]>,
    {
        let lanes = Lanes::new(divisor);
        let one = _mm256_set1_epi32(1);
        // The last byte of the array: a position is clamped to it (it is below it already,
        // by the module's rule) so that the stores below need no check of their own.
        let last_byte = _mm256_set1_epi32(divisor.bytes as i32 - 1);
        const PROBE_CHUNK: usize = 8;
        let mut bytes_at = [[0u32; LANES]; PROBE_CHUNK];
        let mut masks = bytes_at;
        loop {
            let mut items: [Option<I::Item>; LANES] = [(); LANES].map(|_| None);
            let mut n = 0;
            for (slot, key) in items.iter_mut().zip(keys.by_ref()) {
                *slot = Some(key);
                n += 1;
            }
            let mut group: [&[u8]; LANES] = [&[]; LANES];
            for (key, item) in group.iter_mut().zip(&items) {
                if let Some(item) = item {
                    *key = item.as_ref();
                }
            }
            if n <= SCALAR_TAIL {
                for key in &group[..n] {
                    super::super::set_key_bits(key, k, array);
                }
                return;
            }
            fill_group(&mut group, n);
            let mut h = hash_group(&group);
            let delta = rotate_right_17(h);
            // Up to 8 probes' bytes and masks first, then their bits: a load right after a
            // wide store of the same bytes would wait for it.
            let mut probes = usize::from(k);
            while probes > 0 {
                let chunk = probes.min(PROBE_CHUNK);
                for (at, mask) in bytes_at[..chunk].iter_mut().zip(&mut masks[..chunk]) {
                    let (byte, bit) = lanes.byte_and_bit(h);
                    let byte = _mm256_min_epu32(byte, last_byte);
                    // SAFETY: `at` and `mask` are 8 writable `u32`s each; the stores are
                    // unaligned.
                    unsafe {
                        _mm256_storeu_si256(at.as_mut_ptr().cast(), byte);
                        _mm256_storeu_si256(mask.as_mut_ptr().cast(), _mm256_sllv_epi32(one, bit));
                    }
                    h = _mm256_add_epi32(h, delta);
                }
                // The keys' lanes only: the copies of the first key would set its bits again.
                let (at, masks) = (&bytes_at[..chunk], &masks[..chunk]);
                // SAFETY: every position was clamped to `divisor.bytes - 1`, the array's last
                // byte (the caller's contract).
                unsafe { set_bits(array, at, masks, n) };
                probes -= chunk;
            }
            if n < LANES {
                return;
            }
        }
    }

    /// Sets the bits `masks` of the bytes `at` of `array`, the first `lanes` of each row.
    ///
    /// # Safety
    /// Every position in `at` is inside `array`.
    #[inline(always)]
    unsafe fn set_bits(
        array: &mut [u8],
        at: &[[u32; LANES]],
        masks: &[[u32; LANES]],
        lanes: usize,
    ) {
        let mut set = |at: u32, mask: u32| {
            // SAFETY: `at` is inside `array` (the caller's contract).
            unsafe { *array.get_unchecked_mut(at as usize) |= mask as u8 };
        };
        for (at, mask) in at.iter().zip(masks) {
            if lanes == LANES {
                // A full row, the usual one: unrolled.
                for lane in 0..LANES {
                    set(at[lane], mask[lane]);
                }
            } else {
                for lane in 0..lanes.min(LANES) {
                    set(at[lane], mask[lane]);
                }
            }
        }
    }

    /// The hashes of a group of keys, one per lane: in lanes when their lengths are equal.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hash_group(group: &[&[u8]; LANES]) -> __m256i {
        let len = group[0].len();
        if group.iter().all(|key| key.len() == len) {
            return hash_equal_lengths(group, len);
        }
        let mut hashes = [0u32; LANES];
        for (hash, key) in hashes.iter_mut().zip(group) {
            *hash = bloom_hash(key);
        }
        // SAFETY: `hashes` is 8 readable `u32`s; the load is unaligned.
        unsafe { _mm256_loadu_si256(hashes.as_ptr().cast()) }
    }

    /// Format rule: the step between probes is the hash rotated right by 17 bits.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotate_right_17(h: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_srli_epi32::<17>(h), _mm256_slli_epi32::<15>(h))
    }

    /// A [`LaneDivisor`] spread across the lanes.
    struct Lanes {
        bytes: __m256i,
        c: __m256i,
        f: __m128i,
    }

    impl Lanes {
        #[inline]
        #[target_feature(enable = "avx2")]
        fn new(divisor: LaneDivisor) -> Self {
            Lanes {
                bytes: _mm256_set1_epi32(divisor.bytes as i32),
                c: _mm256_set1_epi32(divisor.c as i32),
                f: _mm_cvtsi32_si128(divisor.f as i32),
            }
        }

        /// Each lane's `h % bits` as a byte of the array and a bit of that byte.
        #[inline]
        #[target_feature(enable = "avx2")]
        fn byte_and_bit(&self, h: __m256i) -> (__m256i, __m256i) {
            let x = _mm256_srli_epi32::<3>(h);
            let bit = _mm256_and_si256(h, _mm256_set1_epi32(7));
            // Quotients of the even lanes, then of the odd ones, back into 32-bit lanes.
            let even = _mm256_srl_epi64(_mm256_mul_epu32(x, self.c), self.f);
            let odd =
                _mm256_srl_epi64(_mm256_mul_epu32(_mm256_srli_epi64::<32>(x), self.c), self.f);
            let q = _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd));
            (_mm256_sub_epi32(x, _mm256_mullo_epi32(q, self.bytes)), bit)
        }
    }

    /// LevelDB's hash (`crate::hash`) of eight keys of `len` bytes each, one per lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hash_equal_lengths(keys: &[&[u8]; LANES], len: usize) -> __m256i {
        let m = _mm256_set1_epi32(M as i32);
        let mut h = _mm256_set1_epi32((BLOOM_HASH_SEED ^ (len as u32).wrapping_mul(M)) as i32);
        let mut at = 0;
        while at + 16 <= len {
            for w in transposed_words(keys, at) {
                h = _mm256_mullo_epi32(_mm256_add_epi32(h, w), m);
                h = _mm256_xor_si256(h, _mm256_srli_epi32::<16>(h));
            }
            at += 16;
        }
        if at + 8 <= len {
            for w in transposed_pairs(keys, at) {
                h = _mm256_mullo_epi32(_mm256_add_epi32(h, w), m);
                h = _mm256_xor_si256(h, _mm256_srli_epi32::<16>(h));
            }
            at += 8;
        }
        if at + 4 <= len {
            let mut words = [0u32; LANES];
            for (word, key) in words.iter_mut().zip(keys) {
                *word = u32::from_le_bytes([key[at], key[at + 1], key[at + 2], key[at + 3]]);
            }
            // SAFETY: `words` is 8 readable `u32`s; the load is unaligned.
            let w = unsafe { _mm256_loadu_si256(words.as_ptr().cast()) };
            h = _mm256_mullo_epi32(_mm256_add_epi32(h, w), m);
            h = _mm256_xor_si256(h, _mm256_srli_epi32::<16>(h));
            at += 4;
        }
        if at < len {
            let mut tails = [0u32; LANES];
            for (tail, key) in tails.iter_mut().zip(keys) {
                for (i, &byte) in key[at..].iter().enumerate() {
                    *tail |= u32::from(byte) << (8 * i);
                }
            }
            // SAFETY: `tails` is 8 readable `u32`s; the load is unaligned.
            let w = unsafe { _mm256_loadu_si256(tails.as_ptr().cast()) };
            h = _mm256_mullo_epi32(_mm256_add_epi32(h, w), m);
            h = _mm256_xor_si256(h, _mm256_srli_epi32::<24>(h));
        }
        h
    }

    /// The two 4-byte words at `at..at + 8` of eight keys, as [`transposed_words`] does.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transposed_pairs(keys: &[&[u8]; LANES], at: usize) -> [__m256i; 2] {
        let [r0, r1, r2, r3] = rows::<8>(keys, at);
        let (t0, t1) = (_mm256_unpacklo_epi32(r0, r1), _mm256_unpacklo_epi32(r2, r3));
        [_mm256_unpacklo_epi64(t0, t1), _mm256_unpackhi_epi64(t0, t1)]
    }

    /// The four 4-byte words at `at..at + 16` of eight keys, word `j` of key `i` in lane `i`
    /// of vector `j`: a 4 x 4 transpose in each 128-bit half.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transposed_words(keys: &[&[u8]; LANES], at: usize) -> [__m256i; 4] {
        let [r0, r1, r2, r3] = rows::<16>(keys, at);
        let (t0, t1) = (_mm256_unpacklo_epi32(r0, r1), _mm256_unpacklo_epi32(r2, r3));
        let (t2, t3) = (_mm256_unpackhi_epi32(r0, r1), _mm256_unpackhi_epi32(r2, r3));
        [
            _mm256_unpacklo_epi64(t0, t1),
            _mm256_unpackhi_epi64(t0, t1),
            _mm256_unpacklo_epi64(t2, t3),
            _mm256_unpackhi_epi64(t2, t3),
        ]
    }

    /// Bytes `at..at + WIDTH` (8 or 16) of keys `i` and `i + 4` in the low and high halves of
    /// row `i`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn rows<const WIDTH: usize>(keys: &[&[u8]; LANES], at: usize) -> [__m256i; 4] {
        let mut rows = [_mm256_setzero_si256(); 4];
        for (i, row) in rows.iter_mut().enumerate() {
            let [low, high] = [i, i + 4].map(|lane| {
                let bytes = &keys[lane][at..at + WIDTH];
                // SAFETY: `bytes` is WIDTH readable bytes, as many as the load reads (8 or
                // 16); the loads are unaligned.
                unsafe {
                    if WIDTH == 16 {
                        _mm_loadu_si128(bytes.as_ptr().cast())
                    } else {
                        _mm_loadl_epi64(bytes.as_ptr().cast())
                    }
                }
            });
            *row = _mm256_set_m128i(high, low);
        }
        rows
    }

    /// Bit `i` set when every one of the `k` probes of hash lane `i` finds a set bit.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn probes_all_set(mut h: __m256i, k: u8, array: &[u8], divisor: LaneDivisor) -> u32 {
        let lanes = Lanes::new(divisor);
        // The last word that lies wholly inside the array starts here.
        let last_word = _mm256_set1_epi32(divisor.bytes as i32 - 4);
        let delta = rotate_right_17(h);
        let mut all_set = _mm256_set1_epi32(-1);
        for _ in 0..k {
            let (byte, bit) = lanes.byte_and_bit(h);
            let word_at = _mm256_min_epu32(byte, last_word);
            let shift =
                _mm256_add_epi32(_mm256_slli_epi32::<3>(_mm256_sub_epi32(byte, word_at)), bit);
            // SAFETY: each lane reads the 4 bytes at `word_at <= bytes - 4`, inside `array`
            // (`bytes` is its length; the unsigned minimum holds whatever `byte` is).
            let word = unsafe { _mm256_i32gather_epi32::<1>(array.as_ptr().cast(), word_at) };
            all_set = _mm256_and_si256(all_set, _mm256_srlv_epi32(word, shift));
            h = _mm256_add_epi32(h, delta);
        }
        let low_bits = _mm256_slli_epi32::<31>(all_set);
        _mm256_movemask_ps(_mm256_castsi256_ps(low_bits)) as u32
    }

    #[cfg(test)]
    pub(super) fn probes_all_set_for_test(
        hashes: [u32; LANES],
        k: u8,
        array: &[u8],
        divisor: LaneDivisor,
    ) -> u32 {
        assert!(is_x86_feature_detected!("avx2"));
        // SAFETY: the processor has AVX2 (asserted); `hashes` is 8 readable `u32`s.
        unsafe {
            probes_all_set(
                _mm256_loadu_si256(hashes.as_ptr().cast()),
                k,
                array,
                divisor,
            )
        }
    }

    #[cfg(test)]
    pub(super) fn hash_equal_lengths_for_test(keys: &[&[u8]; LANES]) -> [u32; LANES] {
        assert!(is_x86_feature_detected!("avx2"));
        let mut out = [0u32; LANES];
        // SAFETY: the processor has AVX2 (asserted); `out` is 8 writable `u32`s.
        unsafe {
            let h = hash_equal_lengths(keys, keys[0].len());
            _mm256_storeu_si256(out.as_mut_ptr().cast(), h);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu;
    #[cfg(target_arch = "x86_64")]
    use crate::hash::bloom_hash;

    /// The level with AVX2, which the tests below need (they are ignored where the
    /// processor that built them has none).
    fn avx2() -> Instructions {
        let best = *cpu::supported().last().expect("PORTABLE at least");
        assert!(best.has_avx2(), "this processor has no AVX2");
        best
    }

    /// The lanes' remainder equals `h % bits` for every array size they take, at the hashes
    /// where an inexact quotient would show: around multiples of the size and at the ends.
    #[test]
    fn lane_remainder_is_exact() {
        let mut rng = fastrand::Rng::with_seed(0x1357);
        // Under Miri, which interprets each instruction, fewer sizes of each kind.
        let (small, random) = if cfg!(miri) { (100, 20) } else { (5000, 2000) };
        let mut sizes: Vec<usize> = (4..small).collect();
        sizes.extend((12..29).flat_map(|s| [(1 << s) - 1, 1 << s, (1 << s) + 1]));
        sizes.extend((0..random).map(|_| rng.usize(4..1 << 29)));
        sizes.push((1 << 29) - 1);
        for bytes in sizes {
            let divisor = LaneDivisor::new(bytes).expect("in range");
            let bits = 8 * bytes as u64;
            let mut hashes = vec![0, 1, 7, 8, u32::MAX, u32::MAX - 7];
            for q in [1u64, 2, 3, (1 << 32) / bits, (1 << 32) / bits - 1] {
                for d in [-9i64, -8, -1, 0, 1, 7, 8] {
                    let h = (q * bits) as i64 + d;
                    if (0..1 << 32).contains(&h) {
                        hashes.push(h as u32);
                    }
                }
            }
            hashes.extend((0..8).map(|_| rng.u32(..)));
            for h in hashes {
                let (byte, bit) = divisor.byte_and_bit(h);
                assert_eq!(
                    8 * u64::from(byte) + u64::from(bit),
                    u64::from(h) % bits,
                    "h {h} bytes {bytes}"
                );
            }
        }
        assert!(LaneDivisor::new(3).is_none());
        assert!(LaneDivisor::new(1 << 29).is_none());
    }

    /// The vector code answers each lane as the scalar query does, on random bytes with every
    /// probe count, and hashes eight keys of every length up to 40 as LevelDB's hash does.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[cfg_attr(
        not(leveldb_bloom_test_avx2),
        ignore = "the processor that built the tests has no AVX2"
    )]
    fn lanes_answer_as_the_scalar_query() {
        avx2();
        let mut rng = fastrand::Rng::with_seed(0x2468);
        for len in 0..=40 {
            let keys: Vec<Vec<u8>> = (0..LANES)
                .map(|_| std::iter::repeat_with(|| rng.u8(..)).take(len).collect())
                .collect();
            let group: [&[u8]; LANES] = std::array::from_fn(|i| keys[i].as_slice());
            assert_eq!(
                x86::hash_equal_lengths_for_test(&group),
                group.map(bloom_hash),
                "length {len}"
            );
        }
        let mut answers = [0; 2];
        let (rounds, large) = if cfg!(miri) {
            (40, 600)
        } else {
            (20_000, 5000)
        };
        for round in 0..rounds {
            let bytes = 4 + rng.usize(..if round % 2 == 0 { 64 } else { large });
            let density = rng.u32(..4);
            let mut filter: Vec<u8> = (0..=bytes)
                .map(|_| (0..density).fold(0xff, |b, _| b & rng.u8(..)))
                .collect();
            let k = rng.u8(..31);
            filter[bytes] = k;
            let hashes: [u32; LANES] = std::array::from_fn(|_| rng.u32(..));
            let divisor = LaneDivisor::new(bytes).expect("in range");
            let lanes = x86::probes_all_set_for_test(hashes, k, &filter[..bytes], divisor);
            for (lane, &h) in hashes.iter().enumerate() {
                let scalar = super::super::hash_may_match(h, &filter);
                assert_eq!(
                    lanes >> lane & 1 != 0,
                    scalar,
                    "lane {lane}, k {k}, {bytes} bytes"
                );
                answers[usize::from(scalar)] += 1;
            }
        }
        assert!(answers.iter().all(|&n| n > rounds / 2), "{answers:?}");
    }

    /// Filters built in lanes equal filters built one key at a time by the scalar rules, for
    /// key counts around multiples of the group, equal and unequal key lengths, every size
    /// class of array and several probe counts.
    #[test]
    #[cfg_attr(
        not(leveldb_bloom_test_avx2),
        ignore = "the processor that built the tests has no AVX2"
    )]
    fn lanes_build_as_the_scalar_code() {
        let level = avx2();
        let mut rng = fastrand::Rng::with_seed(0x3579);
        // Under Miri, which interprets each instruction, a sample of the counts and sizes.
        let (counts, arrays): (Vec<usize>, &[(usize, u8)]) = if cfg!(miri) {
            (
                vec![0, 1, 8, 9, 17],
                &[(4, 1), (64, 6), (2048, 30), (70_000, 6)],
            )
        } else {
            let arrays = &[(4, 1), (5, 6), (64, 6), (333, 11), (2048, 30), (70_000, 6)];
            ((0..40).chain([100, 1000]).collect(), arrays)
        };
        for n in counts {
            for &(bytes, k) in arrays {
                let len = rng.usize(..30);
                let keys: Vec<Vec<u8>> = (0..n)
                    .map(|i| {
                        let len = if i % 3 == 0 && n % 2 == 0 { i % 9 } else { len };
                        std::iter::repeat_with(|| rng.u8(..)).take(len).collect()
                    })
                    .collect();
                let mut lanes = vec![0u8; bytes];
                let mut scalar = vec![0u8; bytes];
                for key in &keys {
                    super::super::set_key_bits(key, k, &mut scalar);
                }
                assert!(set_in_lanes(level, &mut keys.iter(), k, &mut lanes));
                assert_eq!(
                    lanes, scalar,
                    "{n} keys of length {len}, {bytes} bytes, k {k}"
                );
            }
        }
    }

    /// Below AVX2, and for arrays the lanes do not take, nothing is done in lanes.
    #[test]
    fn other_levels_and_sizes_leave_the_work_to_the_scalar_code() {
        let keys = [b"key".as_slice(); 20];
        let mut array = [0u8; 64];
        let mut results = [false; 20];
        for level in cpu::supported() {
            let in_lanes = level.has_avx2() && cfg!(target_arch = "x86_64");
            assert_eq!(
                set_in_lanes(level, &mut keys.iter(), 6, &mut array),
                in_lanes
            );
            assert_eq!(
                answer_in_lanes(level, &mut keys.iter().copied(), 6, &array, &mut results) > 0,
                in_lanes
            );
            assert!(!set_in_lanes(level, &mut keys.iter(), 6, &mut array[..3]));
        }
    }
}
