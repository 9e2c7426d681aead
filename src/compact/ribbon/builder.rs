//! The builder: the shape it chooses for a set of keys (the format leaves that choice to it),
//! the keys' equations banded into echelon form, and the solution written as the payload.

use super::row::Row;
use super::shape::{Equation, Shape, rate, short_step, whole_slots};
use super::{MARKER, MAX_RESULT_BITS, SEEDS, SHARES, WIDE_FROM, trailer_len};

/// The slots a filter built on the stack has at most, in each part (with [`band`]'s idle
/// slot); more go to the heap.
const STACK_SLOTS: usize = 129;

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

    /// `slots` zeroed rows and results, and the idle slot [`band`] needs after them; `None`
    /// if the memory is not there.
    fn rows(&mut self, slots: u64) -> Option<(&mut [R], &mut [u32])> {
        let slots = usize::try_from(slots).ok()?.checked_add(1)?;
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
    let (mut equations, mut selected, mut sorted) = (Vec::new(), Vec::new(), Vec::new());
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
                equations.clear();
                if equations.try_reserve(hashes.len()).is_err() {
                    return false;
                }
                equations.extend(hashes.iter().map(|&h| shape.main_equation::<R>(h).equation));
                if !band(rows, results, &equations) {
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
                            .map(|&h| shape.main_equation::<R>(h))
                            .filter(|main| main.selected)
                            .map(|main| shape.extra_equation(&main)),
                    );
                    if keys >= SORTED_FROM_KEYS {
                        selected.sort_unstable_by_key(|equation| equation.start);
                    }
                    let Some((extra_rows, extra_results)) = extra.rows(shape.extra_slots) else {
                        return false;
                    };
                    if band(extra_rows, extra_results, &selected) {
                        let (rows, results) = without_idle(rows, results);
                        let (extra_rows, extra_results) = without_idle(extra_rows, extra_results);
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

/// The slots of an echelon form without [`band`]'s idle slot.
fn without_idle<'a, R>(rows: &'a [R], results: &'a [u32]) -> (&'a [R], &'a [u32]) {
    let slots = rows.len() - 1;
    (&rows[..slots], &results[..slots])
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

/// Equations walking the band at once: each step of one hides the latency of the others'.
const LANES: usize = 3;

/// Brings `equations` into echelon form in `rows` and `results` (zeroed, one per slot and
/// one more, the idle slot, which stays zero), at most one ending on each slot: an equation
/// is reduced by the ones already on its slots until its lowest coefficient falls on a free
/// slot. `false` when two contradict (the seed failed); an equation that reduces to nothing
/// (a duplicate key) is dropped.
///
/// [`LANES`] equations walk at once, each step of each on the slots as they are, a lane
/// taking the next equation when its own has found a free slot (an idle lane waits on the
/// idle slot). The echelon form depends on the order in which equations take slots, the
/// solution does not: its bits on the slots no equation ends on are zero, and which slots
/// those are is a property of the equations' span (each is the lowest coefficient of some
/// equation they imply), not of the order. Whether the equations contradict is not either.
#[inline(always)]
fn band<R: Row>(rows: &mut [R], results: &mut [u32], equations: &[Equation<R>]) -> bool {
    let idle = Equation {
        start: (rows.len() - 1) as u64,
        coefficients: R::ZERO,
        result: 0,
    };
    let mut band = Band {
        rows,
        results,
        equations,
        next: 0,
        unplaced: equations.len(),
        idle,
    };
    let mut lanes = [idle; LANES];
    while band.unplaced > 0 {
        for lane in &mut lanes {
            if !band.step(lane) {
                return false;
            }
        }
    }
    true
}

/// The state of [`band`]: the slots, the equations, and how many are still to place.
struct Band<'a, R> {
    rows: &'a mut [R],
    results: &'a mut [u32],
    equations: &'a [Equation<R>],
    next: usize,
    unplaced: usize,
    /// An equation of no coefficients on the idle slot: a lane without one.
    idle: Equation<R>,
}

impl<R: Row> Band<'_, R> {
    /// One step of `lane`'s equation: placed on a free slot (the lane takes the next one),
    /// reduced to nothing (a duplicate, dropped; `false` if it says `0 = 1`), or reduced by
    /// the equation on its slot and moved to its lowest coefficient.
    #[inline(always)]
    fn step(&mut self, lane: &mut Equation<R>) -> bool {
        let at = lane.start as usize;
        let (existing, existing_result) = (self.rows[at], self.results[at]);
        if existing == R::ZERO {
            self.rows[at] = lane.coefficients;
            self.results[at] = lane.result;
            self.unplaced -= usize::from(lane.coefficients != R::ZERO);
            *lane = self.equations.get(self.next).copied().unwrap_or(self.idle);
            self.next += usize::from(self.next < self.equations.len());
            return true;
        }
        let reduced = lane.coefficients ^ existing;
        if reduced == R::ZERO {
            let consistent = lane.result == existing_result;
            self.unplaced -= 1;
            *lane = self.idle;
            return consistent;
        }
        let shift = reduced.trailing_zeros();
        *lane = Equation {
            start: lane.start + u64::from(shift),
            coefficients: reduced >> shift,
            result: lane.result ^ existing_result,
        };
        true
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
    use super::{Equation, band, solve_columns};

    /// Bands `equations` one by one, each walking until it ends on a free slot: the
    /// textbook elimination [`band`] must agree with.
    fn one_by_one(rows: &mut [u64], results: &mut [u32], equations: &[Equation<u64>]) -> bool {
        for equation in equations {
            let (mut at, mut row, mut result) = (
                equation.start as usize,
                equation.coefficients,
                equation.result,
            );
            loop {
                if rows[at] == 0 {
                    (rows[at], results[at]) = (row, result);
                    break;
                }
                row ^= rows[at];
                result ^= results[at];
                if row == 0 {
                    if result != 0 {
                        return false;
                    }
                    break;
                }
                at += row.trailing_zeros() as usize;
                row >>= row.trailing_zeros();
            }
        }
        true
    }

    /// The solution of an echelon form, its 8 columns of `slots` bits.
    fn solution(rows: &[u64], results: &[u32]) -> Vec<u8> {
        let mut payload = vec![0; rows.len()];
        solve_columns::<u64, 8>(rows, results, &mut payload, 0);
        payload
    }

    /// Small systems, nearly full, with duplicate and contradicting equations: whatever order
    /// the lanes take slots in, the same equations band or fail alike and solve alike.
    #[test]
    fn lanes_band_as_one_by_one() {
        let mut rng = fastrand::Rng::with_seed(11);
        let (mut failed, mut solved) = (0, 0);
        // Under Miri, which interprets every step, a sample.
        let systems = if cfg!(miri) { 60 } else { 20_000 };
        for _ in 0..systems {
            let slots = rng.usize(1..=80);
            let width = rng.usize(1..=slots.min(57));
            let keys = rng.usize(0..=slots + 2);
            let mut equations: Vec<Equation<u64>> = (0..keys)
                .map(|_| Equation {
                    start: rng.u64(..=(slots - width) as u64),
                    coefficients: (rng.u64(..) >> (64 - width)) | 1,
                    result: rng.u32(..) & 0xff,
                })
                .collect();
            // Some keys twice, some twice with another result (a contradiction).
            for _ in 0..rng.usize(0..=2) {
                if let Some(&again) = equations.get(rng.usize(0..keys.max(1))) {
                    let result = again.result ^ u32::from(rng.bool());
                    equations.insert(rng.usize(0..=equations.len()), Equation { result, ..again });
                }
            }
            let (mut rows, mut results) = (vec![0; slots + 1], vec![0; slots + 1]);
            let lanes = band(&mut rows, &mut results, &equations);
            let (mut rows_1, mut results_1) = (vec![0; slots], vec![0; slots]);
            let alone = one_by_one(&mut rows_1, &mut results_1, &equations);
            assert_eq!(lanes, alone, "{equations:?}");
            assert_eq!(
                (rows[slots], results[slots]),
                (0, 0),
                "the idle slot stays free"
            );
            if lanes {
                solved += 1;
                assert_eq!(
                    solution(&rows[..slots], &results[..slots]),
                    solution(&rows_1, &results_1),
                    "{equations:?}"
                );
            } else {
                failed += 1;
            }
        }
        assert!(
            failed > systems / 20 && solved > systems / 20,
            "{failed} failed, {solved} solved"
        );
    }
}
