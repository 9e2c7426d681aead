//! What a filter's length and trailer fix (its parts' slots and widths, the extra part's
//! share), the trailer's bytes, and a key's equations: the format's rules, read by the query
//! and written by the builder.

use super::row::Row;
use super::{MAX_RESULT_BITS, SHARES, SHORT_BELOW, WIDE_FROM};

/// What a filter's length and its `v` fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// `r`: result bits of every key; the extra part adds one to some keys.
    pub(super) result_bits: u32,
    pub(super) seed: u32,
    pub(super) share: u32,
    /// How `m` follows from `m0`: the long form's `trim`, the short form's `less`.
    pub(super) slot_code: u32,
    pub(super) short: bool,
    /// Whether the filter has wide windows ([`WIDE_FROM`]).
    pub(super) wide: bool,
    /// `m`: slots of the main part, each holding `r` bits (one in each column).
    pub(super) slots: u64,
    /// `w`: coefficient bits of a main-part equation.
    pub(super) width: u64,
    /// `e`: slots of the extra part, one bit each.
    pub(super) extra_slots: u64,
    /// Coefficient bits of an extra-part equation (1 when there is no extra slot).
    pub(super) extra_width: u64,
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
pub(super) fn whole_slots(payload_bits: u64, result_bits: u32) -> u64 {
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
pub(super) fn short_step(whole: u64) -> u64 {
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

/// One equation: the XOR of the solution's bits `start + i` for each set bit `i` of
/// `coefficients` is `result` (one bit per column).
#[derive(Debug, Clone, Copy)]
pub(super) struct Equation<R> {
    pub(super) start: u64,
    pub(super) coefficients: R,
    pub(super) result: u32,
}

/// A key's main equation, what its extra one is made from, and whether the extra part holds
/// the key ([`Shape::main_equation`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct MainEquation<R> {
    pub(super) equation: Equation<R>,
    /// `a` of [`Shape::main_equation`].
    pub(super) mixed: u64,
    /// `R` of [`Shape::main_equation`].
    pub(super) product: u64,
    pub(super) selected: bool,
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
    pub(super) fn new(
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
    pub(super) fn forms(len: usize) -> (bool, bool) {
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
    pub(super) fn params(&self) -> ([u8; 2], usize) {
        let r = self.result_bits - 1;
        if self.short {
            ([(r | self.seed << 5 | self.slot_code << 7) as u8, 0], 1)
        } else {
            let v = r | self.seed << 5 | self.share << 7 | self.slot_code << 9;
            ((v as u16).to_le_bytes(), 2)
        }
    }

    /// The key's main equation, with what its extra one is made from
    /// ([`Shape::extra_equation`]) and whether the extra part holds the key. Format rule,
    /// with `h` the key hash and products modulo `2^64`:
    /// `a = (h ^ seed * 0x9e3779b97f4a7c15) * 0xd6e8feb86659fd93` places the main equation
    /// ([`band_position`] with `m`, `w`); `R = a * 0x94d049bb133111eb`: the main result is
    /// `R >> (64 - r)`, the extra result bit 31 of `R`; the key is in the extra part when
    /// `(R & (2^31 - 1)) * m < e * SHARES[share] * 2^27` (exact products);
    /// `g = a * 0xff51afd7ed558ccd` places the extra equation (with `e` and its width).
    /// Needs `m >= 1`.
    #[inline(always)]
    pub(super) fn main_equation<R: Row>(&self, hash: u64) -> MainEquation<R> {
        let a = self.mixed(hash);
        let (start, coefficients) = band_position(a, self.slots, self.width);
        let product = a.wrapping_mul(0x94d0_49bb_1331_11eb);
        let share = SHARES[self.share as usize];
        MainEquation {
            equation: Equation {
                start,
                coefficients,
                result: (product >> (64 - self.result_bits)) as u32,
            },
            mixed: a,
            product,
            selected: u128::from(product & 0x7fff_ffff) * u128::from(self.slots)
                < (u128::from(self.extra_slots) * u128::from(share)) << 27,
        }
    }

    /// The key's extra equation, from its main one (the rule is [`Shape::main_equation`]'s).
    #[inline(always)]
    pub(super) fn extra_equation<R: Row>(&self, main: &MainEquation<R>) -> Equation<R> {
        let (mixed, product) = (main.mixed, main.product);
        let g = mixed.wrapping_mul(0xff51_afd7_ed55_8ccd);
        let (start, coefficients) = band_position(g, self.extra_slots.max(1), self.extra_width);
        Equation {
            start,
            coefficients,
            result: (product >> 31) as u32 & 1,
        }
    }

    /// `a`, the seeded hash that places the main equation: its start grows with it.
    #[inline(always)]
    pub(super) fn mixed(&self, hash: u64) -> u64 {
        (hash ^ u64::from(self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xd6e8_feb8_6659_fd93)
    }

    /// The payload bit where the extra part begins: `r * m`.
    #[inline(always)]
    pub(super) fn extra_base(&self) -> u64 {
        u64::from(self.result_bits) * self.slots
    }
}

/// `2^-r (1 - f / 2)`, the false-positive rate of a ribbon `filter` with `f` the share of
/// keys its extra part holds; `None` if it has no main slot.
pub(in crate::compact) fn expected_false_positive_rate(filter: &[u8]) -> Option<f64> {
    let (shape, _) = Shape::read(filter)?;
    (shape.slots > 0).then(|| rate(&shape))
}

/// The rate of a shape: `2^-r (1 - f / 2)`, `f` the chance that a key is selected.
pub(super) fn rate(shape: &Shape) -> f64 {
    let limit = (u128::from(shape.extra_slots) * u128::from(SHARES[shape.share as usize])) << 27;
    let selected =
        limit.div_ceil(u128::from(shape.slots)).min(1 << 31) as f64 / (1u64 << 31) as f64;
    (-f64::from(shape.result_bits)).exp2() * (1.0 - selected / 2.0)
}
