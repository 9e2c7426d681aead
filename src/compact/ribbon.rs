//! The compact format: a standard ribbon filter (Dillinger and Walzer,
//! "Ribbon filter: practically smaller than Bloom and Xor", 2021). Each key is one equation
//! over GF(2): `w` coefficient bits at a hashed start slot, `r` hashed result bits; the
//! filter stores a solution of all its keys' equations, and a key may match when its
//! equation holds. A query reads `r` windows of the solution, so its time does not grow with
//! the filter. `docs/compact-format.md` is the specification.
//!
//! Layout: `payload ++ [params, 31]`. `params = (r - 1) | seed << 5`; with `P` the payload
//! bits, `m = floor(P / r)` slots; solution column `j` (`0 <= j < r`) is the `m` bits at
//! payload bit `j * m` (bit `i` of the payload is bit `i % 8` of byte `i / 8`). The key hash
//! is XXH3-64 (`XXH3_64bits`, seed 0).
//!
//! Building and querying are compiled once for each instruction-set level that makes them
//! faster (`crate::cpu`): a query is a parity per column, a build a parity per column and
//! slot, both a popcount where the processor has one.

use xxhash_rust::xxh3::xxh3_64;

use crate::cpu::Level;

/// The last byte of a ribbon filter. LevelDB reads it as a Bloom filter with 31 probes,
/// which it answers with "may match".
pub const MARKER: u8 = 31;

/// The most result bits (`r`) a filter has: five bits of `params`.
const MAX_RESULT_BITS: u32 = 32;

/// Seeds a builder tries for one `r` before it takes one result bit less: three bits of
/// `params`.
const SEEDS: u32 = 8;

/// Below this many slots the coefficient width is 32 (or the slot count, if smaller), from
/// it on 57, the widest window one unaligned 8-byte read always covers.
const WIDE_FROM_SLOTS: u64 = 1024;

/// The slots at most a filter built on the stack has; more go to the heap.
const STACK_SLOTS: usize = 128;

/// What a filter's length and `params` byte fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// `r`: result bits per key, 1 to 32; false positives are `2^-r`.
    pub(super) result_bits: u32,
    seed: u32,
    /// `m`: solution bits per result bit.
    slots: u64,
    /// `w`: coefficient bits per key.
    width: u32,
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
fn slots(payload_bits: u64, result_bits: u32) -> u64 {
    if result_bits == 1 {
        payload_bits
    } else if payload_bits < 1 << 58 {
        let reciprocal = RECIPROCALS[result_bits as usize];
        ((u128::from(payload_bits) * u128::from(reciprocal)) >> 64) as u64
    } else {
        payload_bits / u64::from(result_bits)
    }
}

/// A key's equation: the XOR of the solution's bits `start + i` for each set bit `i` of
/// `coefficients` is `result`, in each of the `r` columns.
#[derive(Debug, Clone, Copy)]
struct Equation {
    start: u64,
    coefficients: u64,
    result: u32,
}

impl Shape {
    /// Format rule: `m = floor(P / r)`; `w = min(m, 32)` if `m < 1024`, else 57.
    #[inline(always)]
    fn new(payload_bits: u64, result_bits: u32, seed: u32) -> Shape {
        let slots = slots(payload_bits, result_bits);
        let width = if slots < WIDE_FROM_SLOTS {
            slots.min(32) as u32
        } else {
            57
        };
        Shape {
            result_bits,
            seed,
            slots,
            width,
        }
    }

    /// Format rule: `r = (params & 31) + 1`, `seed = params >> 5`.
    pub(super) fn from_params(params: u8, payload_bits: u64) -> Shape {
        Shape::new(
            payload_bits,
            u32::from(params & 31) + 1,
            u32::from(params >> 5),
        )
    }

    fn params(&self) -> u8 {
        ((self.result_bits - 1) | self.seed << 5) as u8
    }

    /// Format rule, with `h` the key hash and products modulo `2^64`:
    /// `a = (h ^ seed * 0x9e3779b97f4a7c15) * 0xd6e8feb86659fd93`;
    /// `start = floor(a * (m - w + 1) / 2^64)`;
    /// `coefficients = ((a * 0xbf58476d1ce4e5b9) >> (64 - w)) | 1`;
    /// `result = (a * 0x94d049bb133111eb) >> (64 - r)`.
    /// Needs `m >= 1`.
    #[inline(always)]
    fn equation(&self, hash: u64) -> Equation {
        let a = (hash ^ u64::from(self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xd6e8_feb8_6659_fd93);
        let starts = self.slots - u64::from(self.width) + 1;
        Equation {
            start: ((u128::from(a) * u128::from(starts)) >> 64) as u64,
            coefficients: (a.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> (64 - self.width)) | 1,
            result: (a.wrapping_mul(0x94d0_49bb_1331_11eb) >> (64 - self.result_bits)) as u32,
        }
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
    use super::{build_filter, may_match, xxh3_64};

    #[target_feature(enable = "popcnt,bmi1,bmi2")]
    pub(super) fn key_may_match_bmi2(key: &[u8], filter: &[u8]) -> bool {
        may_match(xxh3_64(key), filter)
    }

    #[target_feature(enable = "popcnt")]
    pub(super) fn key_may_match_popcnt(key: &[u8], filter: &[u8]) -> bool {
        may_match(xxh3_64(key), filter)
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

/// Whether the key of `hash` may be in `filter`, a whole ribbon filter (its last byte
/// [`MARKER`]). Format rule: it may when, in every column `j`, the parity of the solution
/// bits `j * m + start + i` over the set bits `i` of its coefficients is bit `j` of its
/// result. A filter with no slot answers "may match".
#[inline(always)]
fn may_match(hash: u64, filter: &[u8]) -> bool {
    match filter {
        [.., params, _] if filter.len() >= 8 => {
            windows_match(hash, filter, filter.len() - 2, *params)
        }
        _ => short_may_match(hash, filter),
    }
}

/// [`may_match`] for filters under 8 bytes (never built: the least payload is 64 bits),
/// read from a zero-padded copy of the payload.
#[cold]
#[inline(never)]
fn short_may_match(hash: u64, filter: &[u8]) -> bool {
    let [payload @ .., params, _] = filter else {
        return true;
    };
    let mut padded = [0u8; 8];
    padded[..payload.len()].copy_from_slice(payload);
    windows_match(hash, &padded, payload.len(), *params)
}

/// The query on the payload of `payload_len` bytes at the start of `bytes`
/// (`bytes.len() >= 8` and `>= payload_len + 2`). Compiled for each `r` up to 16, so that
/// the column loop unrolls; larger `r` (more than about 18 bits per key) run it as a loop.
#[inline(always)]
fn windows_match(hash: u64, bytes: &[u8], payload_len: usize, params: u8) -> bool {
    let shape = Shape::from_params(params, payload_len as u64 * 8);
    if shape.slots == 0 {
        return true;
    }
    let equation = shape.equation(hash);
    macro_rules! for_each_r {
        ($($r:literal)*) => {
            match shape.result_bits {
                $($r => parities(bytes, &shape, &equation, $r),)*
                r => parities(bytes, &shape, &equation, r),
            }
        };
    }
    for_each_r!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16) == equation.result
}

/// The parities of the key's `columns` windows, column `j`'s in bit `j`. A window is read
/// from the 8 bytes at its first byte, or, where those would run past `bytes`, from the last
/// 8 of `bytes`, which hold it too (it ends inside the payload and `w <= 57`). Only the last
/// column's window can lie that close to the end in filters with `m + w >= 48`: it is read
/// without a branch, the others with one that always goes the same way for a filter.
#[inline(always)]
fn parities(bytes: &[u8], shape: &Shape, equation: &Equation, columns: u32) -> u32 {
    let last_read = bytes.len() - 8;
    let near_end = |bit: u64| {
        let byte = ((bit / 8) as usize).min(last_read);
        let word = u64::from_le_bytes(bytes[byte..byte + 8].try_into().expect("8 bytes"));
        word >> (bit - 8 * byte as u64)
    };
    let parity = |window: u64| (window & equation.coefficients).count_ones() & 1;
    let mut bit = equation.start;
    let mut found = 0u32;
    // Each parity ORed in at its own bit: terms the compiler can combine as a tree.
    for column in 0..columns - 1 {
        let byte = (bit / 8) as usize;
        let window = match bytes.get(byte..byte + 8) {
            Some(word) => u64::from_le_bytes(word.try_into().expect("8 bytes")) >> (bit % 8),
            None => near_end(bit),
        };
        found |= parity(window) << column;
        bit += shape.slots;
    }
    found | parity(near_end(bit)) << (columns - 1)
}

/// `2^-r`, the false-positive rate of a ribbon `filter`; `None` if it has no slot.
pub(super) fn expected_false_positive_rate(filter: &[u8]) -> Option<f64> {
    let [payload @ .., params, _] = filter else {
        return None;
    };
    let shape = Shape::from_params(*params, payload.len() as u64 * 8);
    (shape.slots > 0).then(|| (-f64::from(shape.result_bits)).exp2())
}

/// The bits per key at which filters of `min_keys` keys or more get `result_bits` result
/// bits: a filter of `n` keys has at least `n * bits_per_key - 8` payload bits (rounded up to
/// bytes, less the trailer), which must hold `result_bits` columns of `n + n/12 + 1` slots
/// ([`build`]).
pub(super) fn bits_per_key_for(result_bits: u32, min_keys: u32) -> f64 {
    let r = f64::from(result_bits);
    r * 13.0 / 12.0 + (r + 8.0) / f64::from(min_keys)
}

/// The result bits of filters of many keys at `bits_per_key` (`build`'s `n + n/12 + 1`
/// slots a column, `n` large).
pub(super) fn result_bits_at(bits_per_key: f64) -> u32 {
    (bits_per_key * 12.0 / 13.0)
        .floor()
        .clamp(0.0, f64::from(MAX_RESULT_BITS)) as u32
}

/// Writes a ribbon filter for `hashes` into `filter` (payload, `params`, marker) with the
/// most result bits that leave about 8% more slots than keys, trying [`SEEDS`] seeds for
/// each, then one result bit less. Returns `false`, with `filter` unspecified, when none
/// solved (too few bits per key) or the scratch memory was not there.
///
/// Any solution of the keys' equations is a valid filter; this one sets the slots that no
/// equation ends on to zero.
#[inline(always)]
fn build_filter(hashes: &[u64], filter: &mut [u8]) -> bool {
    let Some(payload_len) = filter.len().checked_sub(2) else {
        return false;
    };
    let payload_bits = payload_len as u64 * 8;
    let keys = hashes.len() as u64;
    let needed = keys + keys / 12 + 1;
    // The most `r` with `floor(P / r) >= needed`.
    let most = (payload_bits / needed).min(u64::from(MAX_RESULT_BITS)) as u32;
    let (payload, trailer) = filter.split_at_mut(payload_len);
    let mut stack = ([0u64; STACK_SLOTS], [0u32; STACK_SLOTS]);
    let mut heap = (Vec::new(), Vec::new());
    for result_bits in (1..=most).rev() {
        let Ok(slots) = usize::try_from(slots(payload_bits, result_bits)) else {
            return false;
        };
        let (coefficients, results) = if slots <= STACK_SLOTS {
            (&mut stack.0[..slots], &mut stack.1[..slots])
        } else {
            let more = slots.saturating_sub(heap.0.len());
            if heap.0.try_reserve_exact(more).is_err() || heap.1.try_reserve_exact(more).is_err() {
                return false;
            }
            heap.0.resize(slots, 0);
            heap.1.resize(slots, 0);
            (&mut heap.0[..], &mut heap.1[..])
        };
        for seed in 0..SEEDS {
            let shape = Shape::new(payload_bits, result_bits, seed);
            if band(&shape, hashes, coefficients, results) {
                back_substitute(&shape, coefficients, results, payload);
                trailer[0] = shape.params();
                trailer[1] = MARKER;
                return true;
            }
        }
    }
    false
}

/// Brings the keys' equations into echelon form, at most one ending on each slot: a key's
/// equation is reduced by the equations already on its slots until its lowest coefficient
/// falls on a free slot. `false` when two keys' equations contradict (the seed failed); an
/// equation that reduces to nothing (a duplicate key) is dropped.
///
/// Two keys walk at once (their loads overlap) on the slots as they were: each ends on a
/// slot that was free, and the first one's equation taking that slot changes nothing the
/// second read unless the second ended on the same slot, where it walks on. The result is
/// the echelon form of banding the keys one by one, in order.
#[inline(always)]
fn band(shape: &Shape, hashes: &[u64], coefficients: &mut [u64], results: &mut [u32]) -> bool {
    coefficients.fill(0);
    results.fill(0);
    let mut pairs = hashes.chunks_exact(2);
    for pair in &mut pairs {
        let [first, second] = [shape.equation(pair[0]), shape.equation(pair[1])];
        let (mut at, mut row, mut result) = (
            [first.start as usize, second.start as usize],
            [first.coefficients, second.coefficients],
            [first.result, second.result],
        );
        let mut reduced_to_nothing = false;
        loop {
            let existing = [coefficients[at[0]], coefficients[at[1]]];
            if existing[0] | existing[1] == 0 {
                break;
            }
            // A key on a free slot XORs zeros and stays there (its row's bit 0 is set).
            for k in 0..2 {
                row[k] ^= existing[k];
                result[k] ^= results[at[k]];
                reduced_to_nothing |= row[k] == 0;
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
            if !pair
                .iter()
                .all(|&hash| add(shape, hash, coefficients, results))
            {
                return false;
            }
            continue;
        }
        coefficients[at[0]] = row[0];
        results[at[0]] = result[0];
        if !walk(at[1], row[1], result[1], coefficients, results) {
            return false;
        }
    }
    pairs
        .remainder()
        .iter()
        .all(|&hash| add(shape, hash, coefficients, results))
}

/// Bands one key's equation.
#[inline(always)]
fn add(shape: &Shape, hash: u64, coefficients: &mut [u64], results: &mut [u32]) -> bool {
    let equation = shape.equation(hash);
    walk(
        equation.start as usize,
        equation.coefficients,
        equation.result,
        coefficients,
        results,
    )
}

/// Reduces an equation from slot `at` on until it ends on a free slot (`true`), reduces to
/// nothing (`true`, a duplicate) or to `0 = 1` (`false`).
#[inline(always)]
fn walk(
    mut at: usize,
    mut row: u64,
    mut result: u32,
    coefficients: &mut [u64],
    results: &mut [u32],
) -> bool {
    loop {
        // `at + 63 - row.leading_zeros() < start + w <= m`: `at` stays in the slots.
        let existing = coefficients[at];
        if existing == 0 {
            coefficients[at] = row;
            results[at] = result;
            return true;
        }
        row ^= existing;
        result ^= results[at];
        if row == 0 {
            return result == 0;
        }
        let shift = row.trailing_zeros();
        at += shift as usize;
        row >>= shift;
    }
}

/// Solves the echelon form from the last slot to the first and writes the columns into
/// `payload`: a slot's bit is its result bit XOR the parity of the bits above it that its
/// equation covers (0 for a slot no equation ends on). Compiled for each `r`, so that the
/// columns' running windows stay in registers.
#[inline(always)]
fn back_substitute(shape: &Shape, coefficients: &[u64], results: &[u32], payload: &mut [u8]) {
    macro_rules! for_each_r {
        ($($r:literal)*) => {
            match shape.result_bits {
                $($r => solve_columns::<$r>(coefficients, results, payload),)*
                _ => unreachable!("1 <= r <= 32"),
            }
        };
    }
    for_each_r!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

#[inline(always)]
fn solve_columns<const R: usize>(coefficients: &[u64], results: &[u32], payload: &mut [u8]) {
    payload.fill(0);
    let slots = coefficients.len();
    // `state[j]` bit `k`: column `j`'s solution bit at slot `i + k`.
    let mut state = [0u64; R];
    for i in (0..slots).rev() {
        let (row, result) = (coefficients[i], results[i]);
        for (j, word) in state.iter_mut().enumerate() {
            let above = *word << 1;
            let bit = ((above & row).count_ones() ^ (result >> j)) & 1;
            *word = above | u64::from(bit);
        }
        if i % 64 == 0 {
            for (j, &word) in state.iter().enumerate() {
                or_bits(payload, (j * slots + i) as u64, word);
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
                    assert_eq!(slots(p, r), p / u64::from(r), "P {p} r {r}");
                }
            }
            payload_bits = payload_bits * 9 / 8 + 1;
        }
        assert_eq!(slots(u64::MAX, 7), u64::MAX / 7);
    }

    #[test]
    fn built_filters_answer_every_key_and_about_two_to_the_minus_r_others() {
        for (keys, bytes) in [(10, 14), (100, 126), (1000, 1251), (3000, 3751)] {
            let present = hashes(keys as u64, keys);
            let mut filter = vec![0u8; bytes];
            assert!(build_filter(&present, &mut filter));
            assert_eq!(filter[bytes - 1], MARKER);
            for &hash in &present {
                assert!(may_match(hash, &filter), "{keys} keys");
            }
            let shape = Shape::from_params(filter[bytes - 2], (bytes as u64 - 2) * 8);
            let probes = hashes(1 << 40 | keys as u64, 400_000);
            let hits = probes.iter().filter(|&&h| may_match(h, &filter)).count();
            let expected = probes.len() as f64 / f64::from(shape.result_bits).exp2();
            assert!(
                (hits as f64 - expected).abs() < 5.0 * expected.sqrt() + 0.05 * expected,
                "{keys} keys, r {}: {hits} hits, expected {expected}",
                shape.result_bits
            );
        }
    }

    /// The versions of `level` build the same bytes as the portable ones, and answer alike,
    /// on built filters and with bits flipped.
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
                    assert!(
                        build(level, &hashes, &mut filter),
                        "n {n}, bpk {bits_per_key}"
                    );
                    filter
                });
                assert_eq!(filter, portable, "n {n}, bpk {bits_per_key}");
                for flips in 0..3 {
                    for _ in 0..flips {
                        let at = rng.usize(..filter.len() - 1);
                        filter[at] ^= 1 << rng.u32(..8);
                    }
                    for probe in (0..60).map(|_| rng.u64(..).to_le_bytes()) {
                        assert_eq!(
                            key_may_match(level, &probe, &filter),
                            key_may_match(Level::PORTABLE, &probe, &filter),
                            "n {n}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000);
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
