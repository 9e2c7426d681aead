//! LevelDB's Bloom filter on eight keys at once, in AVX2 lanes: the exact remainders of the
//! probe positions, and the probe tests. The same format rules as the
//! portable code, lane by lane; the portable code stays for other processors and for
//! `LEVELDB_BLOOM_SIMD=portable`, and both are proven against LevelDB.
//!
//! Every function here is compiled for AVX2 and may only be called where `crate::cpu::avx2`
//! said the processor has it.

#![allow(unsafe_code)] // AVX2 intrinsics: target-feature functions, loads and gathers

use std::arch::x86_64::*;

/// Keys per group.
pub(super) const LANES: usize = 8;

/// Proof that this process runs the AVX2 versions: made only where `crate::cpu::avx2` said
/// the processor has AVX2, so its methods may call the AVX2 code.
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

impl Avx2 {
    /// The token, if the AVX2 versions run in this process.
    #[inline]
    pub(super) fn get() -> Option<Avx2> {
        crate::cpu::avx2().then_some(Avx2(()))
    }

    /// See [`starts`].
    #[inline]
    pub(super) fn starts(self, hashes: &[u32; LANES]) -> Starts {
        // SAFETY: the token exists only on processors with AVX2.
        unsafe { starts(hashes) }
    }

    /// The divisor of a bit count below 2^32 with its reciprocal `ceil(2^64 / bits)`.
    #[inline]
    pub(super) fn divisor(self, bits: u32, reciprocal: u64) -> Divisor {
        // SAFETY: the token exists only on processors with AVX2.
        unsafe { divisor(bits, reciprocal) }
    }

    /// See [`positions`].
    #[inline]
    pub(super) fn positions(
        self,
        starts: Starts,
        probes: usize,
        d: &Divisor,
        each: impl FnMut([u32; LANES]),
    ) {
        // SAFETY: the token exists only on processors with AVX2.
        unsafe { positions(starts, probes, d, each) }
    }

    /// See [`all_set`]; `d` must be the divisor of `8 * array.len()` bits.
    #[inline]
    pub(super) fn all_set(self, starts: Starts, probes: usize, d: &Divisor, array: &[u8]) -> u8 {
        // SAFETY: the token exists only on processors with AVX2.
        unsafe { all_set(starts, probes, d, array) }
    }
}

/// Where the probes of eight keys start, and how far apart they are (lane `i`: key `i`).
#[derive(Clone, Copy)]
pub(super) struct Starts {
    h: __m256i,
    delta: __m256i,
}

impl Starts {
    /// Lane by lane: the hashes and the probe steps.
    #[cfg(test)]
    pub(super) fn lanes(self) -> ([u32; LANES], [u32; LANES]) {
        // SAFETY: both are 32 bytes, and every bit pattern is a valid `[u32; 8]`.
        unsafe {
            (
                std::mem::transmute::<__m256i, [u32; LANES]>(self.h),
                std::mem::transmute::<__m256i, [u32; LANES]>(self.delta),
            )
        }
    }
}

/// A bit count below 2^32 and its reciprocal `ceil(2^64 / bits)` in every lane.
#[derive(Clone, Copy)]
pub(super) struct Divisor {
    reciprocal_low: __m256i,
    reciprocal_high: __m256i,
    bits: __m256i,
}

#[target_feature(enable = "avx2")]
fn divisor(bits: u32, reciprocal: u64) -> Divisor {
    Divisor {
        reciprocal_low: _mm256_set1_epi64x((reciprocal & 0xffff_ffff) as i64),
        reciprocal_high: _mm256_set1_epi64x((reciprocal >> 32) as i64),
        bits: _mm256_set1_epi64x(i64::from(bits)),
    }
}

/// The probe starts of eight keys from their hashes: `delta = h.rotate_right(17)` per lane.
/// (The hashes themselves are scalar: a vector hash of eight keys of unequal lengths
/// gathered its words lane by lane and cost more than eight interleaved scalar hashes.)
#[target_feature(enable = "avx2")]
fn starts(hashes: &[u32; LANES]) -> Starts {
    // SAFETY: `hashes` holds the 32 bytes read; unaligned loads are allowed.
    let h = unsafe { _mm256_loadu_si256(hashes.as_ptr().cast()) };
    let delta = _mm256_or_si256(_mm256_srli_epi32::<17>(h), _mm256_slli_epi32::<15>(h));
    Starts { h, delta }
}

/// `x % bits` in each of the four 64-bit lanes whose low halves hold `x`: Lemire's exact
/// remainder `((M * x mod 2^64) * bits) >> 64`, with 32-bit multiplications.
#[inline]
#[target_feature(enable = "avx2")]
fn reduce_half(x: __m256i, d: &Divisor) -> __m256i {
    // M * x mod 2^64 = Ml * x + ((Mh * x) << 32).
    let low = _mm256_add_epi64(
        _mm256_mul_epu32(x, d.reciprocal_low),
        _mm256_slli_epi64::<32>(_mm256_mul_epu32(x, d.reciprocal_high)),
    );
    // (low * bits) >> 64 = (high32(low) * bits + ((low32(low) * bits) >> 32)) >> 32; the
    // sum stays below 2^64.
    let high_part = _mm256_mul_epu32(_mm256_srli_epi64::<32>(low), d.bits);
    let low_part = _mm256_srli_epi64::<32>(_mm256_mul_epu32(low, d.bits));
    _mm256_srli_epi64::<32>(_mm256_add_epi64(high_part, low_part))
}

/// `x % bits` in each of the eight 32-bit lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn reduce(x: __m256i, d: &Divisor) -> __m256i {
    let even = reduce_half(x, d);
    let odd = reduce_half(_mm256_srli_epi64::<32>(x), d);
    _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
}

/// The bit positions of probe `i` of eight keys: `(h + i * delta) % bits`, for `i` from 0,
/// one call of `each` per probe.
///
#[target_feature(enable = "avx2")]
fn positions(starts: Starts, probes: usize, d: &Divisor, mut each: impl FnMut([u32; LANES])) {
    let mut h = starts.h;
    for _ in 0..probes {
        let mut out = [0u32; LANES];
        // SAFETY: `out` has room for the 32 bytes written; unaligned stores are allowed.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), reduce(h, d)) };
        each(out);
        h = _mm256_add_epi32(h, starts.delta);
    }
}

/// Whether every probe bit of each of eight keys is set in `array`: bit `i` of the answer for
/// key `i`. Reads `array` only inside its bounds.
///
/// `d` must be the divisor of `8 * array.len()` bits: then every word index is at most the
/// last; any other `d` gives wrong answers, never a read outside `array`.
#[target_feature(enable = "avx2")]
fn all_set(starts: Starts, probes: usize, d: &Divisor, array: &[u8]) -> u8 {
    // The array as little-endian u32s: the whole ones are gathered, the bytes past them (0 to
    // 3) form one zero-padded word that answers the probes falling there.
    let whole = array.len() / 4;
    let mut last = [0u8; 4];
    last[..array.len() % 4].copy_from_slice(&array[whole * 4..]);
    let last = _mm256_set1_epi32(i32::from_le_bytes(last));
    let whole_v = _mm256_set1_epi32(whole as i32);
    let base = array.as_ptr().cast::<i32>();
    let one = _mm256_set1_epi32(1);
    // 1 in a lane while every probe so far found its bit (so no probes: all set).
    let mut all = one;
    let mut h = starts.h;
    for _ in 0..probes {
        let bit = reduce(h, d);
        let index = _mm256_srli_epi32::<5>(bit);
        // Lanes whose word is whole (index < whole: both below 2^27, compared signed).
        let in_whole = _mm256_cmpgt_epi32(whole_v, index);
        // SAFETY: only lanes with index < whole are read, each the 4 bytes at byte
        // 4 * index, inside `array`; the gather needs no alignment.
        let gathered = unsafe { _mm256_mask_i32gather_epi32::<4>(last, base, index, in_whole) };
        let set = _mm256_and_si256(
            _mm256_srlv_epi32(gathered, _mm256_and_si256(bit, _mm256_set1_epi32(31))),
            one,
        );
        all = _mm256_and_si256(all, set);
        h = _mm256_add_epi32(h, starts.delta);
    }
    let mask = _mm256_cmpeq_epi32(all, one);
    _mm256_movemask_ps(_mm256_castsi256_ps(mask)) as u8
}
