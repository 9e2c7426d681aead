//! The builder: the shape it chooses for a set of keys (the format leaves that choice to it),
//! the keys' equations banded into echelon form, and the solution written as the payload.

use super::row::Row;
use super::shape::{Equation, Shape, rate, short_step, whole_slots};
use super::{MARKER, MAX_RESULT_BITS, SEEDS, SHARES, WIDE_FROM, trailer_len};

/// The slots a filter built on the stack has at most, in each part; more go to the heap.
const STACK_SLOTS: usize = 128;

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
pub(in crate::compact) fn modelled_rate(len: usize, keys: u64) -> f64 {
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
pub(super) fn build_filter(hashes: &[u64], filter: &mut [u8]) -> bool {
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
