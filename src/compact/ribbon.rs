//! The compact format: a standard ribbon filter (Dillinger and Walzer, "Ribbon filter:
//! practically smaller than Bloom and Xor", 2021) with fractional result bits.
//! `docs/compact-format.md` is the specification; this comment is its summary.
//!
//! What it computes. Each key is one linear equation over GF(2): `w` coefficient bits at a
//! hashed start slot, and hashed result bits. The filter stores a solution of all its keys'
//! equations; a key may match when its equations hold, and an absent key satisfies a random
//! equation of `r` result bits with probability `2^-r`.
//!
//! Layout (long form, 48 bytes or more): `payload ++ [lo, hi, 31]`, `P` payload bits,
//! `v = lo | hi << 8`: `r = (v & 31) + 1`, `seed = (v >> 5) & 3`, `share = (v >> 7) & 3`,
//! `trim = v >> 9`; `m0 = floor(P / r)`, `m = m0 - floor(m0 * trim / 512)` slots,
//! `e = P - r * m` extra slots. The short form, under 48 bytes, keeps one byte `v`
//! (`payload ++ [v, 31]`): `share = 2`, and `less = v >> 7` takes a step of slots off `m0`.
//! The main part is `r` columns of `m` bits (column `j` at payload bit `j * m`), the solution
//! of every key's `r`-bit equation. The extra part, the last `e` bits, is a one-column ribbon
//! of its own holding one more result bit for a hashed share of the keys, about
//! `(e / m) * SHARES[share] / 16`: those keys get `r + 1` result bits. So the rate,
//! `2^-r (1 - f / 2)` for a share `f` of keys with the extra bit, moves smoothly with the
//! bits per key instead of in whole steps.
//!
//! Why two parts: a share of keys with one more result bit needs a column that only they
//! constrain. Giving it to the keys that start late in the main part (as RocksDB's
//! "Standard128Ribbon" does with blocks of more columns) leaves its last `w - 1` slots to no
//! key, which is a tenth of a filter of 100 keys; a ribbon of its own has no such tail.
//!
//! Widths: `w = min(m, 57)` (one 8-byte read a window, rows of 64 bits); filters of 2,048
//! bytes or more ([`WIDE_FROM`]) take `w = min(m, 120)` (16-byte reads, rows of 128 bits),
//! whose band needs far fewer spare slots in filters of thousands of keys.
//!
//! Costs. A query hashes the key once (XXH3-64) and reads `r + 1` windows, one parity each,
//! with no branch on the key. A build bands every key into the main part and the selected
//! keys into the extra part (Gaussian elimination along the band, two keys walking at once),
//! then solves each part from its last slot to its first.

use std::fmt::Debug;
use std::ops::{BitAnd, BitOr, BitXor, BitXorAssign, Shl, Shr, ShrAssign};

use xxhash_rust::xxh3::xxh3_64;

use crate::cpu::Level;

/// The last byte of a ribbon filter. LevelDB reads it as a Bloom filter with 31 probes,
/// which it answers with "may match".
pub const MARKER: u8 = 31;

/// Filters shorter than this many bytes keep their parameters in one byte (`[v, 31]`, the
/// short form); longer ones in two (`[lo, hi, 31]`, the long form). A byte is 6% of a
/// filter of 16 bytes, and small filters need less choice of shape.
pub(super) const SHORT_BELOW: usize = 48;

/// The trailer's length for a filter of `len` bytes: the parameters and [`MARKER`].
#[inline(always)]
pub(super) fn trailer_len(len: usize) -> usize {
    if len < SHORT_BELOW { 2 } else { 3 }
}

/// The most result bits (`r`) a filter's main part has: five bits of `v`.
const MAX_RESULT_BITS: u32 = 32;

/// Seeds a builder tries for one slot count: two bits of `v`.
const SEEDS: u32 = 4;

/// The extra part's share of keys, in sixteenths of `e / m`, by `share`.
const SHARES: [u64; 4] = [16, 14, 12, 8];

/// Filters of this many bytes or more have wide windows (up to 120 bits, 57 below): in
/// filters of thousands of keys a narrow band needs ever more spare slots (6% at 10,000 keys,
/// 10.5% at a million), a wide one few (1.6%, 3.8%).
pub(super) const WIDE_FROM: usize = 2048;

/// The slots a filter built on the stack has at most, in each part; more go to the heap.
const STACK_SLOTS: usize = 128;

/// What a filter's length and its `v` fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// `r`: result bits of every key; the extra part adds one to some keys.
    pub(super) result_bits: u32,
    seed: u32,
    share: u32,
    /// How `m` follows from `m0`: the long form's `trim`, the short form's `less`.
    slot_code: u32,
    short: bool,
    /// Whether the filter has wide windows ([`WIDE_FROM`]).
    wide: bool,
    /// `m`: slots of the main part, each holding `r` bits (one in each column).
    slots: u64,
    /// `w`: coefficient bits of a main-part equation.
    width: u64,
    /// `e`: slots of the extra part, one bit each.
    extra_slots: u64,
    /// Coefficient bits of an extra-part equation (1 when there is no extra slot).
    extra_width: u64,
}

/// `ceil(2^64 / r)` for each `r` from 2 (a table: a division costs more than the rest of a
/// query's arithmetic).
const RECIPROCALS: [u64; MAX_RESULT_BITS as usize + 1] = {
    let mut table = [0; MAX_RESULT_BITS as usize + 1];
    let mut r = 2;
    while r < table.len() {
        table[r] = u64::MAX / r as u64 + 1;
        r += 1;
    }
    table
};

/// `floor(payload_bits / result_bits)` (`1 <= result_bits <= 32`): below `2^58` by the
/// rounded-up reciprocal, whose error (`payload_bits * e / 2^64 < 2^-6`, `e < 1`) cannot
/// reach the next multiple of `1 / r >= 2^-5`.
#[inline(always)]
fn whole_slots(payload_bits: u64, result_bits: u32) -> u64 {
    if result_bits == 1 {
        payload_bits
    } else if payload_bits < 1 << 58 {
        let reciprocal = RECIPROCALS[result_bits as usize];
        ((u128::from(payload_bits) * u128::from(reciprocal)) >> 64) as u64
    } else {
        payload_bits / u64::from(result_bits)
    }
}

/// The slots the short form's `less` takes away from `m0`.
#[inline(always)]
fn short_step(whole: u64) -> u64 {
    (whole / 16).max(1).min(whole)
}

/// Format rule: `m = m0 - floor(m0 * trim / 512)` in the long form,
/// `m = m0 - less * max(1, floor(m0 / 16))` in the short form, with `m0 = floor(P / r)`.
#[inline(always)]
fn main_slots(whole: u64, short: bool, slot_code: u32) -> u64 {
    if short {
        whole - u64::from(slot_code) * short_step(whole)
    } else {
        // `trim < 2^7`: the product fits in 128 bits, the result in 64.
        whole - ((u128::from(whole) * u128::from(slot_code)) >> 9) as u64
    }
}

/// A row of coefficients: `u64` in narrow filters, `u128` in wide ones.
trait Row:
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
    /// [`Row::read`], a main-part window.
    #[inline(always)]
    fn main_window(bytes: &[u8], at: u64) -> Self {
        Self::read(bytes, at, Self::MAIN_INSIDE)
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

/// One equation: the XOR of the solution's bits `start + i` for each set bit `i` of
/// `coefficients` is `result` (one bit per column).
#[derive(Debug, Clone, Copy)]
struct Equation<R> {
    start: u64,
    coefficients: R,
    result: u32,
}

/// A key's equations in both parts, and whether the extra part holds it.
#[derive(Debug, Clone, Copy)]
struct KeyEquations<R> {
    main: Equation<R>,
    extra: Equation<R>,
    selected: bool,
}

/// The start and coefficients of an equation from its hash `x` in a part of `slots` slots
/// and `width` coefficient bits: `start = floor(x * (slots - width + 1) / 2^64)`, the
/// coefficients by [`Row::coefficients`].
#[inline(always)]
fn band_position<R: Row>(x: u64, slots: u64, width: u64) -> (u64, R) {
    let starts = slots + 1 - width;
    (
        ((u128::from(x) * u128::from(starts)) >> 64) as u64,
        R::coefficients(x, width),
    )
}

impl Shape {
    /// Format rule: `w = min(m, W)`; the extra part's width `min(max(e, 1), W)`; `W = 57`,
    /// or 120 in filters of [`WIDE_FROM`] bytes or more.
    #[inline(always)]
    fn new(
        payload_bits: u64,
        result_bits: u32,
        seed: u32,
        share: u32,
        (short, wide): (bool, bool),
        slot_code: u32,
    ) -> Shape {
        let slots = main_slots(whole_slots(payload_bits, result_bits), short, slot_code);
        let extra_slots = payload_bits - u64::from(result_bits) * slots;
        let max_width = if wide {
            u128::MAX_WIDTH
        } else {
            u64::MAX_WIDTH
        };
        Shape {
            result_bits,
            seed,
            share,
            slot_code,
            short,
            wide,
            slots,
            width: slots.min(max_width),
            extra_slots,
            extra_width: extra_slots.clamp(1, max_width),
        }
    }

    /// The forms of a filter of `len` bytes: whether it is short, whether it is wide.
    #[inline(always)]
    fn forms(len: usize) -> (bool, bool) {
        (len < SHORT_BELOW, len >= WIDE_FROM)
    }

    /// The shape a filter's trailer gives, and its payload; `None` for a filter too short
    /// to have one. Format rule: the short form's `v` (the byte before the marker) gives
    /// `r = (v & 31) + 1`, `seed = (v >> 5) & 3`, `less = v >> 7`, `share = 2`; the long form's
    /// `v = lo | hi << 8` gives `r = (v & 31) + 1`, `seed = (v >> 5) & 3`,
    /// `share = (v >> 7) & 3`, `trim = v >> 9`.
    #[inline(always)]
    pub(super) fn read(filter: &[u8]) -> Option<(Shape, &[u8])> {
        let bits = |payload: &[u8]| payload.len() as u64 * 8;
        if filter.len() < SHORT_BELOW {
            let [payload @ .., v, _] = filter else {
                return None;
            };
            let v = u32::from(*v);
            let forms = Shape::forms(filter.len());
            let shape = Shape::new(bits(payload), (v & 31) + 1, (v >> 5) & 3, 2, forms, v >> 7);
            Some((shape, payload))
        } else {
            let [payload @ .., lo, hi, _] = filter else {
                return None;
            };
            let v = u32::from(u16::from_le_bytes([*lo, *hi]));
            let (r, seed, share) = ((v & 31) + 1, (v >> 5) & 3, (v >> 7) & 3);
            let forms = Shape::forms(filter.len());
            let shape = Shape::new(bits(payload), r, seed, share, forms, v >> 9);
            Some((shape, payload))
        }
    }

    /// The parameter bytes of the trailer (one in the short form).
    fn params(&self) -> ([u8; 2], usize) {
        let r = self.result_bits - 1;
        if self.short {
            ([(r | self.seed << 5 | self.slot_code << 7) as u8, 0], 1)
        } else {
            let v = r | self.seed << 5 | self.share << 7 | self.slot_code << 9;
            ((v as u16).to_le_bytes(), 2)
        }
    }

    /// The key's equations. Format rule, with `h` the key hash and products modulo `2^64`:
    /// `a = (h ^ seed * 0x9e3779b97f4a7c15) * 0xd6e8feb86659fd93` places the main equation
    /// ([`band_position`] with `m`, `w`); `R = a * 0x94d049bb133111eb`: the main result is
    /// `R >> (64 - r)`, the extra result bit 31 of `R`; the key is in the extra part when
    /// `(R & (2^31 - 1)) * m < e * SHARES[share] * 2^27` (exact products);
    /// `g = a * 0xff51afd7ed558ccd` places the extra equation (with `e` and its width).
    /// Needs `m >= 1`.
    #[inline(always)]
    fn key<R: Row>(&self, hash: u64) -> KeyEquations<R> {
        let a = self.mixed(hash);
        let (start, coefficients) = band_position(a, self.slots, self.width);
        let r = a.wrapping_mul(0x94d0_49bb_1331_11eb);
        let g = a.wrapping_mul(0xff51_afd7_ed55_8ccd);
        let (extra_start, extra_coefficients) =
            band_position(g, self.extra_slots.max(1), self.extra_width);
        let share = SHARES[self.share as usize];
        KeyEquations {
            main: Equation {
                start,
                coefficients,
                result: (r >> (64 - self.result_bits)) as u32,
            },
            extra: Equation {
                start: extra_start,
                coefficients: extra_coefficients,
                result: (r >> 31) as u32 & 1,
            },
            selected: u128::from(r & 0x7fff_ffff) * u128::from(self.slots)
                < (u128::from(self.extra_slots) * u128::from(share)) << 27,
        }
    }

    /// `a`, the seeded hash that places the main equation: its start grows with it.
    #[inline(always)]
    fn mixed(&self, hash: u64) -> u64 {
        (hash ^ u64::from(self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xd6e8_feb8_6659_fd93)
    }

    /// The payload bit where the extra part begins: `r * m`.
    #[inline(always)]
    fn extra_base(&self) -> u64 {
        u64::from(self.result_bits) * self.slots
    }
}

/// Whether `key` may be in the ribbon `filter` (2 or more bytes, the last [`MARKER`]), by
/// the version of the query compiled for `level`.
#[inline(always)]
#[allow(unsafe_code)] // calls the version compiled for the processor's level
pub(super) fn key_may_match(level: Level, key: &[u8], filter: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if level.has_avx2() {
            // SAFETY: `level` says the processor has BMI1, BMI2 and popcnt.
            return unsafe { x86::key_may_match_bmi2(key, filter) };
        }
        if level.has_popcnt() {
            // SAFETY: `level` says the processor has popcnt.
            return unsafe { x86::key_may_match_popcnt(key, filter) };
        }
    }
    let _ = level;
    key_may_match_portable(key, filter)
}

/// Answers `keys` against one ribbon `filter` into `results` (pairs in order, as many as the
/// shorter has), by the version compiled for `level`: the filter's shape is read once.
#[allow(unsafe_code)] // calls the version compiled for the processor's level
pub(super) fn keys_may_match<'k>(
    level: Level,
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if level.has_avx2() {
            // SAFETY: `level` says the processor has BMI1, BMI2 and popcnt.
            return unsafe { x86::keys_may_match_bmi2(keys, filter, results) };
        }
        if level.has_popcnt() {
            // SAFETY: `level` says the processor has popcnt.
            return unsafe { x86::keys_may_match_popcnt(keys, filter, results) };
        }
    }
    let _ = level;
    batch_may_match(keys, filter, results)
}

/// The query in the target's baseline instructions. (Each version is a function of its
/// own, so that the dispatch inlines into the caller without the versions' stack frames.)
#[inline(never)]
fn key_may_match_portable(key: &[u8], filter: &[u8]) -> bool {
    may_match(xxh3_64(key), filter)
}

/// Writes a ribbon filter for `hashes` into `filter` ([`build_filter`]), by the version
/// compiled for `level`.
#[allow(unsafe_code)] // calls the version compiled for the processor's level
pub(super) fn build(level: Level, hashes: &[u64], filter: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if level.has_popcnt() {
        // SAFETY: `level` says the processor has popcnt.
        return unsafe { x86::build_popcnt(hashes, filter) };
    }
    let _ = level;
    build_portable(hashes, filter)
}

#[inline(never)]
fn build_portable(hashes: &[u64], filter: &mut [u8]) -> bool {
    build_filter(hashes, filter)
}

/// The versions compiled for x86-64's wider instructions.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{batch_may_match, build_filter, may_match, xxh3_64};

    #[target_feature(enable = "popcnt,bmi1,bmi2")]
    pub(super) fn key_may_match_bmi2(key: &[u8], filter: &[u8]) -> bool {
        may_match(xxh3_64(key), filter)
    }

    #[target_feature(enable = "popcnt")]
    pub(super) fn key_may_match_popcnt(key: &[u8], filter: &[u8]) -> bool {
        may_match(xxh3_64(key), filter)
    }

    #[target_feature(enable = "popcnt,bmi1,bmi2")]
    pub(super) fn keys_may_match_bmi2<'k>(
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        batch_may_match(keys, filter, results)
    }

    #[target_feature(enable = "popcnt")]
    pub(super) fn keys_may_match_popcnt<'k>(
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        batch_may_match(keys, filter, results)
    }

    #[target_feature(enable = "popcnt")]
    pub(super) fn build_popcnt(hashes: &[u64], filter: &mut [u8]) -> bool {
        build_filter(hashes, filter)
    }
}

/// The key hash of the format: XXH3-64 (`XXH3_64bits`, seed 0).
#[inline(always)]
pub(super) fn key_hash(key: &[u8]) -> u64 {
    xxh3_64(key)
}

/// A ribbon filter's bytes as a query reads them: at least 8 (shorter filters, which no
/// builder writes, are read from a zero-padded copy of their payload), with the shape its
/// trailer gives.
struct Readable<'f> {
    bytes: &'f [u8],
    shape: Shape,
}

impl<'f> Readable<'f> {
    /// `None` when the filter has no main slot (every key may match) or is under 8 bytes.
    #[inline(always)]
    fn new(filter: &'f [u8]) -> Option<Readable<'f>> {
        let (shape, _) = Shape::read(filter)?;
        (shape.slots > 0 && filter.len() >= 8).then_some(Readable {
            bytes: filter,
            shape,
        })
    }

    /// Whether the key of `hash` may be in the filter, whose rows are `R`. Format rule: in
    /// every main column `j`, the parity of the bits `j * m + start + i` over the set bits `i`
    /// of the main coefficients is bit `j` of the main result; and, for a key the extra part
    /// holds, the parity of the bits `r * m + start + i` over its extra coefficients is its
    /// extra result.
    #[inline(always)]
    fn may_match<R: Row>(&self, hash: u64) -> bool {
        let key = self.shape.key::<R>(hash);
        macro_rules! for_each_r {
            ($($r:literal)*) => {
                match self.shape.result_bits {
                    $($r => self.parities(&key.main, $r),)*
                    r => self.parities(&key.main, r),
                }
            };
        }
        let main = for_each_r!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16) ^ key.main.result;
        let extra_window = R::window(self.bytes, self.shape.extra_base() + key.extra.start);
        let extra = (extra_window & key.extra.coefficients).parity() ^ key.extra.result;
        main | (extra & u32::from(key.selected)) == 0
    }

    /// The parities of the main equation's `columns` windows, column `j`'s in bit `j`, the
    /// last column first.
    #[inline(always)]
    fn parities<R: Row>(&self, equation: &Equation<R>, columns: u32) -> u32 {
        let mut bit = equation.start + u64::from(columns - 1) * self.shape.slots;
        let mut found = 0;
        for _ in 0..columns {
            found = found << 1 | (R::main_window(self.bytes, bit) & equation.coefficients).parity();
            bit = bit.wrapping_sub(self.shape.slots);
        }
        found
    }

    /// [`Readable::may_match`] with the filter's rows.
    #[inline(always)]
    fn may_match_either(&self, hash: u64) -> bool {
        if self.shape.wide {
            self.may_match::<u128>(hash)
        } else {
            self.may_match::<u64>(hash)
        }
    }
}

/// Whether the key of `hash` may be in `filter`, a whole ribbon filter (its last byte
/// [`MARKER`]). A filter with no main slot answers "may match".
#[inline(always)]
fn may_match(hash: u64, filter: &[u8]) -> bool {
    if filter.len() < 8 {
        return short_may_match(hash, filter);
    }
    Readable::new(filter).is_none_or(|readable| readable.may_match_either(hash))
}

/// [`may_match`] for filters under 8 bytes (never built: the least payload is 64 bits).
#[cold]
#[inline(never)]
fn short_may_match(hash: u64, filter: &[u8]) -> bool {
    let Some((shape, payload)) = Shape::read(filter) else {
        return true;
    };
    if shape.slots == 0 {
        return true;
    }
    let mut padded = [0u8; 8];
    padded[..payload.len()].copy_from_slice(payload);
    // Under 8 bytes: the short form, narrow.
    Readable {
        bytes: &padded,
        shape,
    }
    .may_match::<u64>(hash)
}

/// Keys hashed this many at a time before their queries, so that the hashes and the
/// queries of neighbouring keys overlap.
const BATCH: usize = 8;

#[inline(always)]
fn batch_may_match<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    let keys = keys.into_iter();
    let Some(readable) = Readable::new(filter) else {
        for (result, key) in results.iter_mut().zip(keys) {
            *result = may_match(xxh3_64(key), filter);
        }
        return;
    };
    if readable.shape.wide {
        readable_batch::<u128>(keys, &readable, results)
    } else {
        readable_batch::<u64>(keys, &readable, results)
    }
}

/// [`batch_may_match`] on a filter with at least one main slot, whose rows are `R`.
#[inline(always)]
fn readable_batch<'k, R: Row>(
    mut keys: impl Iterator<Item = &'k [u8]>,
    readable: &Readable,
    results: &mut [bool],
) {
    for chunk in results.chunks_mut(BATCH) {
        let mut hashes = [0u64; BATCH];
        let mut filled = 0;
        for (hash, key) in hashes[..chunk.len()].iter_mut().zip(&mut keys) {
            *hash = xxh3_64(key);
            filled += 1;
        }
        for (result, &hash) in chunk[..filled].iter_mut().zip(&hashes) {
            *result = readable.may_match::<R>(hash);
        }
        if filled < chunk.len() {
            return;
        }
    }
}

/// `2^-r (1 - f / 2)`, the false-positive rate of a ribbon `filter` with `f` the share of
/// keys its extra part holds; `None` if it has no main slot.
pub(super) fn expected_false_positive_rate(filter: &[u8]) -> Option<f64> {
    let (shape, _) = Shape::read(filter)?;
    (shape.slots > 0).then(|| rate(&shape))
}

/// The rate of a shape: `2^-r (1 - f / 2)`, `f` the chance that a key is selected.
fn rate(shape: &Shape) -> f64 {
    let limit = (u128::from(shape.extra_slots) * u128::from(SHARES[shape.share as usize])) << 27;
    let selected =
        limit.div_ceil(u128::from(shape.slots)).min(1 << 31) as f64 / (1u64 << 31) as f64;
    (-f64::from(shape.result_bits)).exp2() * (1.0 - selected / 2.0)
}

/// Spare slots the builder gives `keys` keys over their number in a part of narrow or
/// `wide` windows, first try. Narrow: enough that each seed bands about three times in four
/// (about 1.5% at 100 keys, 3% at 1,000, 6% at 10,000, 10.5% at a million: a band of fixed
/// width needs more spare slots the more keys it holds, as the chance grows that some
/// stretch of slots is overfull). Wide: about 2% at 2,000 keys to 4.2% at a million and
/// 5.2% at ten million, where a seed bands nine times in ten or more; fewer would band
/// about as often as narrow ones, for a few hundredths of a percent of rate, but each key's
/// walk along a band this wide grows steeply as the spare slots shrink.
fn spare_slots(keys: u64, wide: bool) -> u64 {
    let doublings_past_128 = u64::from((64 - keys.leading_zeros()).saturating_sub(8));
    let per_2000 = if wide {
        24 + 5 * doublings_past_128
    } else {
        30 + 15 * doublings_past_128
    };
    2 + keys.saturating_mul(per_2000) / 2000
}

/// The shape the builder tries first for `r` result bits in `payload_bits` bits of a filter
/// of the `forms` ([`Shape::forms`]): the fewest main slots at or above `least_slots` that
/// `trim` (or `less`) reaches, seed 0. `None` when `r` columns of that many slots do not fit.
fn first_shape(
    payload_bits: u64,
    result_bits: u32,
    least_slots: u64,
    forms: (bool, bool),
) -> Option<Shape> {
    let short = forms.0;
    let whole = whole_slots(payload_bits, result_bits);
    if whole < least_slots || whole == 0 {
        return None;
    }
    let slot_code = if short {
        u32::from(whole - least_slots >= short_step(whole))
    } else {
        // The largest `trim <= 127` with `whole - floor(whole * trim / 512) >= least_slots`.
        let room = u128::from(whole - least_slots + 1) * 512 - 1;
        (room / u128::from(whole)).min(127) as u32
    };
    Some(Shape::new(
        payload_bits,
        result_bits,
        0,
        2,
        forms,
        slot_code,
    ))
}

/// The fewest main slots the builder tries first for `keys` keys in a filter of the
/// `forms`: one spare slot in the short form, [`spare_slots`] in the long form.
fn first_least_slots(keys: u64, (short, wide): (bool, bool)) -> u64 {
    keys + if short { 1 } else { spare_slots(keys, wide) }
}

/// The rate a filter of `keys` keys in `len` bytes gets when the builder's first shape
/// bands: the model behind [`crate::compact::false_positive_rate_at`] and `for_fp_rate`.
pub(super) fn modelled_rate(len: usize, keys: u64) -> f64 {
    let payload_bits = len.saturating_sub(trailer_len(len)) as u64 * 8;
    let forms = Shape::forms(len);
    let least = first_least_slots(keys, forms);
    let most = (payload_bits / least).min(u64::from(MAX_RESULT_BITS)) as u32;
    if most == 0 {
        return 1.0;
    }
    match first_shape(payload_bits, most, least, forms) {
        Some(shape) if shape.short => rate(&shape),
        Some(shape) => rate(&Shape {
            share: first_share(&shape, keys),
            ..shape
        }),
        None => 1.0,
    }
}

/// Scratch space for one part's echelon form: on the stack up to [`STACK_SLOTS`] slots.
struct Echelon<R> {
    stack: ([R; STACK_SLOTS], [u32; STACK_SLOTS]),
    heap: (Vec<R>, Vec<u32>),
}

impl<R: Row> Echelon<R> {
    fn new() -> Echelon<R> {
        Echelon {
            stack: ([R::ZERO; STACK_SLOTS], [0; STACK_SLOTS]),
            heap: (Vec::new(), Vec::new()),
        }
    }

    /// `slots` zeroed rows and results; `None` if the memory is not there.
    fn rows(&mut self, slots: u64) -> Option<(&mut [R], &mut [u32])> {
        let slots = usize::try_from(slots).ok()?;
        let (rows, results) = if slots <= STACK_SLOTS {
            (&mut self.stack.0[..slots], &mut self.stack.1[..slots])
        } else {
            let more = slots.saturating_sub(self.heap.0.len());
            self.heap.0.try_reserve_exact(more).ok()?;
            self.heap.1.try_reserve_exact(more).ok()?;
            self.heap.0.resize(slots, R::ZERO);
            self.heap.1.resize(slots, 0);
            (&mut self.heap.0[..slots], &mut self.heap.1[..slots])
        };
        rows.fill(R::ZERO);
        results.fill(0);
        Some((rows, results))
    }
}

/// Filters of this many keys or more are banded in the order of the keys' starts: their
/// slots (12 bytes each while banding) outgrow the caches.
const SORTED_FROM_KEYS: u64 = 1 << 18;

/// How many slot counts the builder tries for one `r`, [`SEEDS`] seeds each, before it takes
/// one result bit less.
const SLOT_COUNTS_PER_R: u32 = 8;

/// Writes a ribbon filter for `hashes` into `filter` (payload, parameters, marker). Returns
/// `false`, with `filter` unspecified, when none solved (too few bits per key) or the
/// scratch memory was not there.
///
/// The builder's choices (not the format's): the most `r` whose columns hold
/// [`spare_slots`] more slots than keys; the fewest such slots `trim` reaches; seeds 0 to 3;
/// for each seed that bands the main part, the largest share of keys whose extra part
/// bands; failing all, a few more slots, then one result bit less. Any solution of the keys'
/// equations is a valid filter; this one sets the slots that no equation ends on to zero.
#[inline(always)]
fn build_filter(hashes: &[u64], filter: &mut [u8]) -> bool {
    if filter.len() >= WIDE_FROM {
        build_rows::<u128>(hashes, filter)
    } else {
        build_rows::<u64>(hashes, filter)
    }
}

/// [`build_filter`] with the rows of the filter's form.
#[inline(always)]
fn build_rows<R: Row>(hashes: &[u64], filter: &mut [u8]) -> bool {
    let forms = Shape::forms(filter.len());
    let short = forms.0;
    let Some(payload_len) = filter.len().checked_sub(trailer_len(filter.len())) else {
        return false;
    };
    let payload_bits = payload_len as u64 * 8;
    let keys = hashes.len() as u64;
    let (payload, trailer) = filter.split_at_mut(payload_len);
    let (mut main, mut extra) = (Echelon::<R>::new(), Echelon::<R>::new());
    let (mut selected, mut sorted) = (Vec::new(), Vec::new());
    let first_least = first_least_slots(keys, forms);
    let most = (payload_bits / first_least).min(u64::from(MAX_RESULT_BITS)) as u32;
    for result_bits in (1..=most).rev() {
        let mut least = first_least;
        for _ in 0..SLOT_COUNTS_PER_R {
            let Some(first) = first_shape(payload_bits, result_bits, least, forms) else {
                break;
            };
            let shares = if short {
                first.share..first.share + 1
            } else {
                first_share(&first, keys)..SHARES.len() as u32
            };
            for seed in 0..SEEDS {
                let shape = Shape { seed, ..first };
                let Some((rows, results)) = main.rows(shape.slots) else {
                    return false;
                };
                // Past the caches, keys banded in the order of their starts walk the slots
                // front to back instead of at random.
                let hashes = if keys < SORTED_FROM_KEYS {
                    hashes
                } else {
                    sorted.clear();
                    if sorted.try_reserve_exact(hashes.len()).is_err() {
                        return false;
                    }
                    sorted.extend_from_slice(hashes);
                    sorted.sort_unstable_by_key(|&h| shape.mixed(h));
                    &sorted[..]
                };
                if !band(
                    rows,
                    results,
                    hashes.iter().map(|&h| shape.key::<R>(h).main),
                ) {
                    continue;
                }
                for share in shares.clone() {
                    let shape = Shape { share, ..shape };
                    selected.clear();
                    if selected.try_reserve(hashes.len()).is_err() {
                        return false;
                    }
                    selected.extend(
                        hashes
                            .iter()
                            .map(|&h| shape.key::<R>(h))
                            .filter(|key| key.selected)
                            .map(|key| key.extra),
                    );
                    if keys >= SORTED_FROM_KEYS {
                        selected.sort_unstable_by_key(|equation| equation.start);
                    }
                    let Some((extra_rows, extra_results)) = extra.rows(shape.extra_slots) else {
                        return false;
                    };
                    if band(extra_rows, extra_results, selected.iter().copied()) {
                        payload.fill(0);
                        back_substitute(&shape, rows, results, payload);
                        let base = shape.extra_base();
                        solve_columns::<R, 1>(extra_rows, extra_results, payload, base);
                        let (params, params_len) = shape.params();
                        trailer[..params_len].copy_from_slice(&params[..params_len]);
                        trailer[params_len] = MARKER;
                        return true;
                    }
                }
            }
            // A few more slots: the next count `trim` (or `less`) reaches past this one.
            least = first.slots + 1 + if short { 0 } else { first.slots / 128 };
        }
    }
    false
}

/// The largest share of keys the extra part of `shape` is likely to hold: the first whose
/// expected keys, and their spread, leave it [`spare_slots`] free (else the smallest share).
fn first_share(shape: &Shape, keys: u64) -> u32 {
    let fits = |share: u64| {
        let expected = u128::from(keys) * u128::from(shape.extra_slots) * u128::from(share)
            / (16 * u128::from(shape.slots));
        let expected = u64::try_from(expected).unwrap_or(u64::MAX);
        // Binomial: the keys selected vary by about their square root.
        expected
            .saturating_add(spare_slots(expected, shape.wide))
            .saturating_add(expected.isqrt())
            <= shape.extra_slots
    };
    SHARES
        .iter()
        .position(|&share| fits(share))
        .unwrap_or(SHARES.len() - 1) as u32
}

/// Brings `equations` into echelon form in `rows` and `results` (zeroed, one per slot), at
/// most one ending on each slot: an equation is reduced by the ones already on its slots
/// until its lowest coefficient falls on a free slot. `false` when two contradict (the
/// seed failed); an equation that reduces to nothing (a duplicate key) is dropped.
///
/// Two equations walk at once (their loads overlap) on the slots as they were: each ends on
/// a slot that was free, and the first one taking that slot changes nothing the second read
/// unless the second ended on the same slot, where it walks on. The result is the echelon
/// form of banding them one by one, in order.
#[inline(always)]
fn band<R: Row>(
    rows: &mut [R],
    results: &mut [u32],
    equations: impl Iterator<Item = Equation<R>>,
) -> bool {
    let mut equations = equations.peekable();
    while let Some(first) = equations.next() {
        let Some(second) = equations.next() else {
            return walk(first, rows, results);
        };
        let (mut at, mut row, mut result) = (
            [first.start as usize, second.start as usize],
            [first.coefficients, second.coefficients],
            [first.result, second.result],
        );
        let mut reduced_to_nothing = false;
        loop {
            let existing = [rows[at[0]], rows[at[1]]];
            if existing[0] | existing[1] == R::ZERO {
                break;
            }
            // An equation on a free slot XORs zeros and stays there (its bit 0 is set).
            for k in 0..2 {
                row[k] ^= existing[k];
                result[k] ^= results[at[k]];
                reduced_to_nothing |= row[k] == R::ZERO;
            }
            if reduced_to_nothing {
                break;
            }
            for k in 0..2 {
                let shift = row[k].trailing_zeros();
                at[k] += shift as usize;
                row[k] >>= shift;
            }
        }
        if reduced_to_nothing {
            if !(walk(first, rows, results) && walk(second, rows, results)) {
                return false;
            }
            continue;
        }
        rows[at[0]] = row[0];
        results[at[0]] = result[0];
        let reduced = Equation {
            start: at[1] as u64,
            coefficients: row[1],
            result: result[1],
        };
        if !walk(reduced, rows, results) {
            return false;
        }
    }
    true
}

/// Reduces one equation until it ends on a free slot (`true`), reduces to nothing (`true`,
/// a duplicate) or to `0 = 1` (`false`).
#[inline(always)]
fn walk<R: Row>(equation: Equation<R>, rows: &mut [R], results: &mut [u32]) -> bool {
    let (mut at, mut row, mut result) = (
        equation.start as usize,
        equation.coefficients,
        equation.result,
    );
    loop {
        // `at + 63 - row.leading_zeros() < start + w <= slots`: `at` stays in the slots.
        let existing = rows[at];
        if existing == R::ZERO {
            rows[at] = row;
            results[at] = result;
            return true;
        }
        row ^= existing;
        result ^= results[at];
        if row == R::ZERO {
            return result == 0;
        }
        let shift = row.trailing_zeros();
        at += shift as usize;
        row >>= shift;
    }
}

/// Solves the main part's echelon form into `payload`, compiled for each `r` so that the
/// columns' running windows stay in registers.
#[inline(always)]
fn back_substitute<R: Row>(shape: &Shape, rows: &[R], results: &[u32], payload: &mut [u8]) {
    macro_rules! for_each_r {
        ($($r:literal)*) => {
            match shape.result_bits {
                $($r => solve_columns::<R, $r>(rows, results, payload, 0),)*
                _ => unreachable!("1 <= r <= 32"),
            }
        };
    }
    for_each_r!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// Solves an echelon form of `R` columns from the last slot to the first and ORs column `j`
/// into `payload` from bit `base + j * slots` on: a slot's bit is its result bit XOR the
/// parity of the bits above it that its row covers (0 for a slot no row ends on).
#[inline(always)]
fn solve_columns<R: Row, const C: usize>(
    rows: &[R],
    results: &[u32],
    payload: &mut [u8],
    base: u64,
) {
    let slots = rows.len();
    // `state[j]` bit `k`: column `j`'s solution bit at slot `i + k`.
    let mut state = [R::ZERO; C];
    for i in (0..slots).rev() {
        let (row, result) = (rows[i], results[i]);
        for (j, word) in state.iter_mut().enumerate() {
            let above = *word << 1;
            let bit = (above & row).parity() ^ ((result >> j) & 1);
            *word = above | R::from_bit(bit);
        }
        if i % 64 == 0 {
            for (j, &word) in state.iter().enumerate() {
                or_bits(payload, base + (j * slots + i) as u64, word.low_word());
            }
        }
    }
}

/// ORs the 64 bits of `word` into `payload` from bit `at` on, dropping bits past its end.
fn or_bits(payload: &mut [u8], at: u64, word: u64) {
    let (byte, shift) = ((at / 8) as usize, at % 8);
    let spread = u128::from(word) << shift;
    for (k, target) in payload.iter_mut().skip(byte).take(9).enumerate() {
        *target |= (spread >> (8 * k)) as u8;
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::FilterPolicy;
    use crate::{CompactPolicy, cpu};

    fn hashes(seed: u64, count: usize) -> Vec<u64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..count).map(|_| rng.u64(..)).collect()
    }

    #[test]
    fn slots_by_reciprocal_equal_division() {
        let mut payload_bits = 0u64;
        while payload_bits < 1 << 58 {
            for p in [
                payload_bits,
                payload_bits + 1,
                payload_bits * 3 + 7,
                (1 << 58) - 1,
            ] {
                for r in 1..=MAX_RESULT_BITS {
                    assert_eq!(whole_slots(p, r), p / u64::from(r), "P {p} r {r}");
                }
            }
            payload_bits = payload_bits * 9 / 8 + 1;
        }
        assert_eq!(whole_slots(u64::MAX, 7), u64::MAX / 7);
    }

    /// Every trailer value of both forms gives a shape whose parts fit the payload and whose
    /// parameters write back to the same bytes.
    #[test]
    fn every_trailer_fits_its_payload_and_round_trips() {
        for len in [3usize, 8, 9, 20, 47, 48, 49, 126, 1251, 2047, 2048, 100_000] {
            let values: Box<dyn Iterator<Item = u16>> = if len < SHORT_BELOW {
                Box::new(0..=255)
            } else {
                Box::new(0..=u16::MAX)
            };
            for v in values {
                let mut filter = vec![0u8; len];
                let trailer = trailer_len(len);
                filter[len - trailer..len - 1].copy_from_slice(&v.to_le_bytes()[..trailer - 1]);
                filter[len - 1] = MARKER;
                let (shape, payload) = Shape::read(&filter).expect("3 bytes or more");
                let bits = payload.len() as u64 * 8;
                assert_eq!(payload.len(), len - trailer);
                assert!(
                    shape.extra_base() + shape.extra_slots == bits,
                    "len {len} v {v}"
                );
                let max_width = if len < WIDE_FROM { 57 } else { 120 };
                assert!(shape.width <= shape.slots.max(1) && shape.width <= max_width);
                assert!(shape.extra_width <= max_width && shape.wide == (len >= WIDE_FROM));
                let (params, params_len) = shape.params();
                assert_eq!(params_len, trailer - 1);
                let mut rebuilt = filter.clone();
                rebuilt[len - trailer..len - 1].copy_from_slice(&params[..params_len]);
                // Bits of `v` the short form does not read (none) come back as written.
                assert_eq!(Shape::read(&rebuilt).unwrap().0, shape, "len {len} v {v}");
            }
        }
    }

    #[test]
    fn built_filters_answer_every_key_and_their_expected_rate() {
        for (keys, bytes) in [(10, 14), (50, 64), (100, 126), (1000, 1251), (3000, 3751)] {
            let present = hashes(keys as u64, keys);
            let mut filter = vec![0u8; bytes];
            assert!(build_filter(&present, &mut filter));
            assert_eq!(filter[bytes - 1], MARKER);
            for &hash in &present {
                assert!(may_match(hash, &filter), "{keys} keys");
            }
            let expected = expected_false_positive_rate(&filter).unwrap();
            let probes = hashes(1 << 40 | keys as u64, 1_000_000);
            let hits = probes.iter().filter(|&&h| may_match(h, &filter)).count() as f64;
            let want = probes.len() as f64 * expected;
            // One filter's solution is one draw: its rate scatters around the expectation by
            // more than the probes' binomial spread, so the bound is loose.
            assert!(
                (hits - want).abs() < 6.0 * want.sqrt() + 0.25 * want,
                "{keys} keys: {hits} hits, expected {want}"
            );
        }
    }

    /// The keys the extra part holds are the share the format says, in narrow and wide
    /// filters.
    #[test]
    fn the_extra_part_holds_its_share_of_keys() {
        for (keys, len) in [(1000, 1251), (3000, 3751)] {
            let present = hashes(7, keys);
            let mut filter = vec![0u8; len];
            assert!(build_filter(&present, &mut filter));
            let (shape, _) = Shape::read(&filter).unwrap();
            let selected = present
                .iter()
                .filter(|&&h| shape.key::<u128>(h).selected)
                .count() as f64;
            let share = shape.extra_slots as f64 * SHARES[shape.share as usize] as f64
                / (16.0 * shape.slots as f64);
            assert!(shape.extra_slots > 0 && selected > 0.0);
            assert!(
                (selected / keys as f64 - share).abs() < 0.06,
                "{keys}: {selected} {share}"
            );
        }
    }

    /// Format rule: wide coefficients of at most 57 bits are the narrow ones, so that one
    /// rule states both.
    #[test]
    fn narrow_coefficients_are_the_top_of_the_wide_ones() {
        let mut rng = fastrand::Rng::with_seed(0x3c);
        for _ in 0..10_000 {
            let x = rng.u64(..);
            for width in 1..=57 {
                let narrow = <u64 as Row>::coefficients(x, width);
                assert_eq!(u128::from(narrow), <u128 as Row>::coefficients(x, width));
                assert!(narrow >> (width - 1) <= 1);
            }
            let wide = <u128 as Row>::coefficients(x, 120);
            assert!(wide >> 119 <= 1 && wide & 1 == 1);
        }
    }

    /// Filters of up to ten million keys build, in the length asked, with the rate the model
    /// gives for their size (within the spread of one filter), never all zero.
    #[test]
    fn large_filters_build_with_their_modelled_rate() {
        for keys in [100_000usize, 1_000_000] {
            let policy = CompactPolicy::new(10.0).unwrap();
            let len = policy.filter_len(keys).unwrap();
            let present = hashes(keys as u64, keys);
            let mut filter = vec![0u8; len];
            assert!(build(cpu::level(), &present, &mut filter), "{keys} keys");
            for &hash in present.iter().step_by(97) {
                assert!(may_match(hash, &filter));
            }
            let expected = expected_false_positive_rate(&filter).unwrap();
            let modelled = modelled_rate(len, keys as u64);
            assert!(
                expected <= modelled * 1.25,
                "{keys}: {expected} vs {modelled}"
            );
            let probes = hashes(1 << 41 | keys as u64, 2_000_000);
            let hits = probes.iter().filter(|&&h| may_match(h, &filter)).count() as f64;
            let want = probes.len() as f64 * expected;
            assert!(
                (hits - want).abs() < 6.0 * want.sqrt(),
                "{keys}: {hits} vs {want}"
            );
        }
    }

    /// The versions of `level` build the same bytes as the portable ones, and answer alike,
    /// one key at a time and in batches, on built filters and with bits flipped.
    fn builds_and_answers_as_the_portable_version(level: Level) {
        let mut rng = fastrand::Rng::with_seed(0x71b6);
        let mut compared = 0;
        for n in (0..40).chain([64, 100, 129, 500, 1000, 1100, 3000]) {
            for bits_per_key in [1.5, 3.0, 6.0, 10.0, 16.0, 25.0] {
                let hashes: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
                let len = CompactPolicy::new(bits_per_key)
                    .unwrap()
                    .filter_len(n)
                    .unwrap();
                let [mut filter, portable] = [level, Level::PORTABLE].map(|level| {
                    let mut filter = vec![0u8; len];
                    let built = build(level, &hashes, &mut filter);
                    assert!(built || bits_per_key < 3.0, "n {n}, bpk {bits_per_key}");
                    filter
                });
                assert_eq!(filter, portable, "n {n}, bpk {bits_per_key}");
                let last = filter.len() - 1;
                filter[last] = MARKER;
                for flips in 0..3 {
                    for _ in 0..flips {
                        let at = rng.usize(..filter.len() - 1);
                        filter[at] ^= 1 << rng.u32(..8);
                    }
                    let probes: Vec<[u8; 8]> = (0..60).map(|_| rng.u64(..).to_le_bytes()).collect();
                    let mut batch = [vec![false; 60], vec![false; 60]];
                    for (answers, level) in batch.iter_mut().zip([level, Level::PORTABLE]) {
                        keys_may_match(level, probes.iter().map(|p| &p[..]), &filter, answers);
                    }
                    for (i, probe) in probes.iter().enumerate() {
                        let one = key_may_match(level, probe, &filter);
                        assert_eq!(one, key_may_match(Level::PORTABLE, probe, &filter), "n {n}");
                        assert_eq!([one, one], [batch[0][i], batch[1][i]], "n {n}");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000);
    }

    #[test]
    fn portable_versions_answer_alike_one_by_one_and_in_batches() {
        builds_and_answers_as_the_portable_version(Level::PORTABLE);
    }

    /// The lowest level this processor runs that passes `has`.
    fn level_with(has: fn(Level) -> bool) -> Level {
        let level = cpu::supported().into_iter().find(|&level| has(level));
        level.expect("the processor has the level (else the test is ignored)")
    }

    /// A test of the versions compiled for one level, ignored where the processor that built
    /// the tests lacks it (build.rs).
    macro_rules! level_test {
        ($test:ident, $built_with:ident, $has:expr, $lacking:literal) => {
            #[test]
            #[cfg_attr(not($built_with), ignore = $lacking)]
            fn $test() {
                builds_and_answers_as_the_portable_version(level_with($has));
            }
        };
    }

    level_test!(
        popcnt_versions_build_and_answer_as_the_portable_ones,
        leveldb_bloom_test_popcnt,
        Level::has_popcnt,
        "the processor that built the tests has no popcnt"
    );
    level_test!(
        bmi2_versions_build_and_answer_as_the_portable_ones,
        leveldb_bloom_test_avx2,
        Level::has_avx2,
        "the processor that built the tests has no BMI2"
    );
}
