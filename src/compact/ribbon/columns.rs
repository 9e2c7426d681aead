//! A key's main equation checked in every column of a narrow filter at once: column `j`'s
//! window is the 64 bits at payload bit `start + j * m`, shifted to that bit, masked by the
//! coefficients; its parity must be bit `j` of the result. The scalar query reads the columns
//! one after another; here they are lanes: eight a vector with AVX-512 (its byte permutes
//! or its gather, and its popcount of each lane), four with AVX2 (a popcount from nibble
//! tables). The rule is `Readable::may_match`'s, lane for lane.
//!
//! Each window's read is the scalar one's: its byte `min(bit / 8, len - 8)` and its shift the
//! rest of the bit, so that no read leaves the filter, and a window ends inside the payload
//! (`query.rs`). Lanes past the last column are not tested, whatever they read. A vector of
//! columns that fails ends the check: an absent key fails its first vector but once in 256
//! (AVX-512).

#![allow(unsafe_code)] // AVX-512 and AVX2 versions of a narrow filter's column check

use super::row::Row;
use super::shape::{Equation, Shape};

/// How a narrow filter's main columns are checked: one after another, or in vector lanes
/// ([`Avx512`], [`Avx2`]: values only code compiled for those instructions makes).
pub(super) trait Columns: Copy {
    /// Whether every one of the `r` windows of `equation` in `bytes` (at least 8 bytes; a
    /// narrow filter of `shape`) has the parity its result bit says.
    fn hold(self, bytes: &[u8], shape: &Shape, equation: &Equation<u64>) -> bool;
}

/// The columns one after another ([`columns_hold`]), in every processor's instructions.
#[derive(Clone, Copy)]
pub(super) struct OneAtATime;

impl Columns for OneAtATime {
    #[inline(always)]
    fn hold(self, bytes: &[u8], shape: &Shape, equation: &Equation<u64>) -> bool {
        columns_hold(bytes, shape, equation)
    }
}

/// Whether every main column of `equation` (in `bytes`, a filter of `shape`) holds, one column after another, two at a
/// time: the check stops at the first pair that fails (an absent key's first pair, three
/// times in four).
#[inline(always)]
pub(super) fn columns_hold<R: Row>(bytes: &[u8], shape: &Shape, equation: &Equation<R>) -> bool {
    // A narrow window of 48 bits or more ends at least 6 bytes before the end of the
    // filter (its last bit at most `r * m - 1 < P`, the trailer 2 or 3 bytes after the
    // payload): its 8-byte read never needs the end's clamp.
    let inside = R::MAIN_INSIDE || shape.width >= 48;
    let column = |bit: u64| {
        let window = R::read(bytes, bit, inside);
        (window & equation.coefficients).parity()
    };
    let mut bit = equation.start;
    let mut result = equation.result;
    let mut left = shape.result_bits;
    while left >= 2 {
        let failed = (column(bit) ^ result) | (column(bit + shape.slots) ^ (result >> 1));
        if failed & 1 != 0 {
            return false;
        }
        bit += 2 * shape.slots;
        result >>= 2;
        left -= 2;
    }
    left == 0 || (column(bit) ^ result) & 1 == 0
}

/// The columns in AVX-512 lanes: a value exists only where the processor has the
/// instructions ([`Avx512::new`]).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Avx512 {
    /// Whether a filter of more than 128 bytes has its windows gathered (else read one after
    /// another, as [`OneAtATime`] does).
    gather: bool,
}

/// The columns in AVX2 lanes: a value exists only where the processor has the instructions
/// ([`Avx2::new`]).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx512 {
    /// A proof that the processor has the instructions: callable without `unsafe` only from
    /// code compiled for them.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vpopcntdq")]
    pub(super) fn new() -> Avx512 {
        Avx512 { gather: true }
    }

    /// The columns of filters over 128 bytes read one after another: a gather of windows
    /// outside the first-level cache waits longer than their separate loads (a single
    /// query's filter, `scripts/bench compact`); a batch's filter stays in that cache, where
    /// the gather is faster.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vpopcntdq")]
    pub(super) fn single() -> Avx512 {
        Avx512 { gather: false }
    }
}

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// A proof that the processor has the instructions: callable without `unsafe` only from
    /// code compiled for them.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn new() -> Avx2 {
        Avx2(())
    }
}

#[cfg(target_arch = "x86_64")]
impl Columns for Avx512 {
    #[inline(always)]
    fn hold(self, bytes: &[u8], shape: &Shape, equation: &Equation<u64>) -> bool {
        if bytes.len() > 128 && !self.gather {
            return OneAtATime.hold(bytes, shape, equation);
        }
        // SAFETY: an `Avx512` exists only where the processor has the instructions, and a
        // narrow filter's query has at least 8 bytes.
        unsafe { x86::hold_avx512(bytes, shape.slots, equation, shape.result_bits) }
    }
}

#[cfg(target_arch = "x86_64")]
impl Columns for Avx2 {
    #[inline(always)]
    fn hold(self, bytes: &[u8], shape: &Shape, equation: &Equation<u64>) -> bool {
        // SAFETY: an `Avx2` exists only where the processor has the instructions, and a
        // narrow filter's query has at least 8 bytes.
        unsafe { x86::hold_avx2(bytes, shape.slots, equation, shape.result_bits) }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Equation;

    /// [`super::Columns::hold`] in eight lanes, the windows picked out of a filter of at
    /// most 128 bytes held in two registers (most of LevelDB's: a filter covers 2 KiB of a
    /// table), or gathered from a longer one.
    ///
    /// # Safety
    ///
    /// The processor has AVX-512 F, BW, DQ, VBMI and VPOPCNTDQ; `bytes` holds at least 8
    /// bytes.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vpopcntdq")]
    pub(super) unsafe fn hold_avx512(
        bytes: &[u8],
        slots: u64,
        equation: &Equation<u64>,
        columns: u32,
    ) -> bool {
        if bytes.len() > 128 {
            return lanes_hold(bytes, slots, equation, columns, |byte, taken| {
                // SAFETY: each taken lane reads 8 bytes at a byte at most `len - 8` of
                // `bytes` (`lanes_hold`'s clamp).
                unsafe {
                    _mm512_mask_i64gather_epi64::<1>(
                        _mm512_setzero_si512(),
                        taken,
                        byte,
                        bytes.as_ptr().cast(),
                    )
                }
            });
        }
        // The filter's bytes, zero past its end: masked loads read none of those.
        let len = bytes.len() as u32;
        let low_bits = |n: u32| u64::MAX.checked_shr(64 - n).unwrap_or(0);
        let (low_mask, high_mask) = (low_bits(len.min(64)), low_bits(len.saturating_sub(64)));
        // SAFETY: the masks take bytes `..len` of `bytes` and no others.
        let (low, high) = unsafe {
            (
                _mm512_maskz_loadu_epi8(low_mask, bytes.as_ptr().cast()),
                _mm512_maskz_loadu_epi8(high_mask, bytes.as_ptr().add(64.min(bytes.len())).cast()),
            )
        };
        // Each lane's first byte copied to its eight, then 0 to 7 added: the byte indices
        // of each lane's eight bytes (at most 127: no carry between bytes).
        let spread = _mm512_set_epi64(
            0x3838_3838_3838_3838,
            0x3030_3030_3030_3030,
            0x2828_2828_2828_2828,
            0x2020_2020_2020_2020,
            0x1818_1818_1818_1818,
            0x1010_1010_1010_1010,
            0x0808_0808_0808_0808,
            0,
        );
        let within = _mm512_set1_epi64(0x0706_0504_0302_0100);
        lanes_hold(bytes, slots, equation, columns, |byte, _| {
            let indices = _mm512_add_epi8(_mm512_permutexvar_epi8(spread, byte), within);
            _mm512_permutex2var_epi8(low, indices, high)
        })
    }

    /// The column check of [`hold_avx512`], eight columns a vector, with `words` giving
    /// the taken lanes' 8 bytes at each lane's byte (at most `len - 8`).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vpopcntdq")]
    fn lanes_hold(
        bytes: &[u8],
        slots: u64,
        equation: &Equation<u64>,
        columns: u32,
        words: impl Fn(__m512i, __mmask8) -> __m512i,
    ) -> bool {
        let lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        let mut bits = _mm512_add_epi64(
            _mm512_set1_epi64(equation.start as i64),
            _mm512_mullo_epi64(lane, _mm512_set1_epi64(slots as i64)),
        );
        let step = _mm512_set1_epi64(slots.wrapping_mul(8) as i64);
        let last = _mm512_set1_epi64((bytes.len() - 8) as i64);
        let coefficients = _mm512_set1_epi64(equation.coefficients as i64);
        let mut results = _mm512_srlv_epi64(_mm512_set1_epi64(i64::from(equation.result)), lane);
        let one = _mm512_set1_epi64(1);
        let mut left = columns;
        loop {
            let taken: __mmask8 = if left >= 8 { 0xff } else { (1 << left) - 1 };
            let byte = _mm512_min_epu64(_mm512_srli_epi64::<3>(bits), last);
            let shift = _mm512_sub_epi64(bits, _mm512_slli_epi64::<3>(byte));
            let windows =
                _mm512_and_si512(_mm512_srlv_epi64(words(byte, taken), shift), coefficients);
            let parities = _mm512_xor_si512(_mm512_popcnt_epi64(windows), results);
            if _mm512_mask_test_epi64_mask(taken, parities, one) != 0 {
                return false;
            }
            if left <= 8 {
                return true;
            }
            left -= 8;
            bits = _mm512_add_epi64(bits, step);
            results = _mm512_srli_epi64::<8>(results);
        }
    }

    /// [`super::Columns::hold`] in four lanes.
    ///
    /// # Safety
    ///
    /// The processor has AVX2; `bytes` holds at least 8 bytes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn hold_avx2(
        bytes: &[u8],
        slots: u64,
        equation: &Equation<u64>,
        columns: u32,
    ) -> bool {
        let lane = _mm256_set_epi64x(3, 2, 1, 0);
        let start = equation.start;
        let mut bits = _mm256_set_epi64x(
            start.wrapping_add(slots.wrapping_mul(3)) as i64,
            start.wrapping_add(slots.wrapping_mul(2)) as i64,
            start.wrapping_add(slots) as i64,
            start as i64,
        );
        let step = _mm256_set1_epi64x(slots.wrapping_mul(4) as i64);
        let last = _mm256_set1_epi64x((bytes.len() - 8) as i64);
        let coefficients = _mm256_set1_epi64x(equation.coefficients as i64);
        let mut results = _mm256_srlv_epi64(_mm256_set1_epi64x(i64::from(equation.result)), lane);
        let nibbles = _mm256_set1_epi8(0x0f);
        let counts = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let one = _mm256_set1_epi64x(1);
        let mut left = columns;
        loop {
            let taken = _mm256_cmpgt_epi64(_mm256_set1_epi64x(i64::from(left)), lane);
            // Bits and bytes stay below 2^62: signed comparisons order them.
            let unclamped = _mm256_srli_epi64::<3>(bits);
            let byte = _mm256_blendv_epi8(unclamped, last, _mm256_cmpgt_epi64(unclamped, last));
            let shift = _mm256_sub_epi64(bits, _mm256_slli_epi64::<3>(byte));
            // SAFETY: each taken lane reads 8 bytes at a byte at most `len - 8` of `bytes`.
            let words = unsafe {
                _mm256_mask_i64gather_epi64::<1>(
                    _mm256_setzero_si256(),
                    bytes.as_ptr().cast(),
                    byte,
                    taken,
                )
            };
            let windows = _mm256_and_si256(_mm256_srlv_epi64(words, shift), coefficients);
            let low = _mm256_shuffle_epi8(counts, _mm256_and_si256(windows, nibbles));
            let high = _mm256_shuffle_epi8(
                counts,
                _mm256_and_si256(_mm256_srli_epi16::<4>(windows), nibbles),
            );
            let popcounts = _mm256_sad_epu8(_mm256_add_epi8(low, high), _mm256_setzero_si256());
            let parities = _mm256_and_si256(_mm256_xor_si256(popcounts, results), one);
            if _mm256_testz_si256(parities, parities) == 0 {
                return false;
            }
            if left <= 4 {
                return true;
            }
            left -= 4;
            bits = _mm256_add_epi64(bits, step);
            results = _mm256_srli_epi64::<4>(results);
        }
    }
}
