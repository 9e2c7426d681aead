//! A row of coefficients: 64 bits in narrow filters (windows of up to 57 bits), 128 in wide
//! ones (up to 120), with the format's rule for a key's coefficients and the one unaligned read
//! a window takes.

use std::fmt::Debug;
use std::ops::{BitAnd, BitOr, BitXor, BitXorAssign, Shl, Shr, ShrAssign};

/// A row of coefficients: `u64` in narrow filters, `u128` in wide ones.
pub(super) trait Row:
    Copy
    + Debug
    + Eq
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + BitXorAssign
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
    + ShrAssign<u32>
{
    const ZERO: Self;
    /// The widest window of the form: what one unaligned read of the row's bytes always
    /// covers after its shift (at most 7 bits).
    const MAX_WIDTH: u64;
    /// Format rule: the top `width` bits of the 128 bits
    /// `(x * 0xbf58476d1ce4e5b9) * 2^64 + x * 0xc2b2ae3d27d4eb4f`, lowest bit set (in narrow
    /// filters, `width <= 57`, the first product alone).
    fn coefficients(x: u64, width: u64) -> Self;
    /// Whether a main-part window never needs the end's clamp: true of wide filters, whose
    /// `m >= 385` slots (2,048 bytes, `r <= 32`, `trim <= 127`) make `w = 120`, so that a
    /// window at `at <= r * m - 120 <= P - 120` reads its 16 bytes before the marker.
    const MAIN_INSIDE: bool;
    /// The bits of `bytes` (at least the row's size) from bit `at` on, as many as
    /// [`Row::MAX_WIDTH`] or more: the row's bytes at `at`'s byte, or the last ones of `bytes`
    /// where those would run past the end (a clamp that also spares the read its bounds
    /// check). Every window a query reads ends inside the payload, at least 16 bits before
    /// the end of `bytes`, so the shift stays inside the row either way. `inside`: the read
    /// is known not to need the clamp, so the shift is `at mod 8` (below 64, which spares
    /// `u128` shifts their test for the upper half).
    fn read(bytes: &[u8], at: u64, inside: bool) -> Self;
    /// [`Row::read`], any window.
    #[inline(always)]
    fn window(bytes: &[u8], at: u64) -> Self {
        Self::read(bytes, at, false)
    }
    fn parity(self) -> u32;
    fn trailing_zeros(self) -> u32;
    fn from_bit(bit: u32) -> Self;
    /// The lowest 64 bits.
    fn low_word(self) -> u64;
}

/// Implements [`Row`] for `$row`, whose windows are at most `$max_width` bits, with the
/// coefficients of `$x` and `$width` given by the form's rule `$coefficients`, and `$folded`
/// a word of `$bits` with the same parity.
macro_rules! row {
    (
        $row:ty,
        $max_width:literal,
        $main_inside:literal,
        |$x:ident, $width:ident| $coefficients:expr,
        |$bits:ident| $folded:expr
    ) => {
        impl Row for $row {
            const ZERO: $row = 0;
            const MAX_WIDTH: u64 = $max_width;
            const MAIN_INSIDE: bool = $main_inside;

            #[inline(always)]
            fn coefficients($x: u64, $width: u64) -> $row {
                $coefficients
            }

            #[inline(always)]
            fn read(bytes: &[u8], at: u64, inside: bool) -> $row {
                const SIZE: usize = size_of::<$row>();
                let Some(last) = bytes.len().checked_sub(SIZE) else {
                    return 0;
                };
                let byte = ((at / 8) as usize).min(last);
                let word = <$row>::from_le_bytes(bytes[byte..][..SIZE].try_into().expect("a row"));
                if inside {
                    word >> (at % 8)
                } else {
                    word >> ((at - 8 * byte as u64) & (<$row>::BITS as u64 - 1))
                }
            }

            #[inline(always)]
            fn parity(self) -> u32 {
                let $bits = self;
                let folded: u64 = $folded;
                folded.count_ones() & 1
            }

            #[inline(always)]
            fn trailing_zeros(self) -> u32 {
                <$row>::trailing_zeros(self)
            }

            #[inline(always)]
            fn from_bit(bit: u32) -> $row {
                <$row>::from(bit)
            }

            #[inline(always)]
            fn low_word(self) -> u64 {
                self as u64
            }
        }
    };
}

row!(
    u64,
    57,
    false,
    |x, width| (x.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> (64 - width)) | 1,
    |bits| bits
);

// The halves' XOR has the parity of both: one popcount instead of two.
row!(
    u128,
    120,
    true,
    |x, width| {
        let bits = u128::from(x.wrapping_mul(0xbf58_476d_1ce4_e5b9)) << 64
            | u128::from(x.wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
        (bits >> (128 - width)) | 1
    },
    |bits| (bits ^ (bits >> 64)) as u64
);
