//! Building a compact filter: choosing the layout and encoding the fingerprints. Not part of
//! the format (any layout that fits decodes); `docs/compact-format.md`, "Building", says what
//! this builder chooses and why.

use super::layout::{KAPPAS, Layout, MAX_LOW_BITS};
use crate::error::Error;

impl Layout {
    /// The layout with the fewest expected false positives (distinct fingerprints over
    /// `Z * 2^L`) whose encoding of `hashes` (sorted, distinct) fits in `payload_bits`, or
    /// `None` if none fits.
    ///
    /// Not part of the format (any layout that fits decodes): for the two widths around the
    /// optimum, the most buckets that fit, searched from an estimate.
    pub(super) fn choose(hashes: &[u64], payload_bits: u64) -> Option<Layout> {
        let keys = hashes.len().max(1) as u64;
        // About L + 2.2 bits per key at the optimum.
        let widest = (payload_bits / keys)
            .saturating_sub(2)
            .clamp(1, u64::from(MAX_LOW_BITS));
        let mut best: Option<Fit> = None;
        for low_bits in (widest.saturating_sub(1).max(1)..=widest).rev() {
            let low_bits = low_bits as u32;
            if let Some(b) = best {
                // One bit fewer per fingerprint frees `distinct` bits for buckets; unless
                // that doubles them it cannot beat the best found: skip the passes. (An
                // estimate: any choice that fits is a valid filter.)
                let most = Layout::new(payload_bits, low_bits, KAPPAS - 1)
                    .buckets
                    .min(b.layout.buckets + (payload_bits - b.bits) + b.distinct * 9 / 8);
                if u128::from(most) << low_bits <= b.score_numerator() {
                    continue;
                }
            }
            let Some(found) = Layout::most_buckets(hashes, payload_bits, low_bits, keys) else {
                continue;
            };
            if best.is_none_or(|b| found.beats(&b)) {
                best = Some(found);
            }
        }
        best.map(|fit| fit.layout)
    }

    /// For `low_bits`, about the layout with the most buckets whose encoding fits. Starts
    /// from the estimate that a fifth of the keys share a bucket, and tries more buckets
    /// only while the space left could hold them.
    fn most_buckets(hashes: &[u64], payload_bits: u64, low_bits: u32, keys: u64) -> Option<Fit> {
        let target = (payload_bits + keys / 5).saturating_sub(keys * u64::from(low_bits + 1));
        let kappa = (0..KAPPAS)
            .rev()
            .find(|&k| Layout::new(payload_bits, low_bits, k).buckets <= target)
            .unwrap_or(0);
        let measure = |kappa| Layout::new(payload_bits, low_bits, kappa).measure(hashes);
        let mut found = measure(kappa);
        if found.bits > payload_bits {
            for kappa in (0..kappa).rev() {
                let smaller = measure(kappa);
                if smaller.bits <= payload_bits {
                    return Some(smaller);
                }
            }
            return None;
        }
        for kappa in kappa + 1..KAPPAS {
            // Each bucket more costs about a bit (a little more: fewer share).
            let more = Layout::new(payload_bits, low_bits, kappa);
            if payload_bits - found.bits < more.buckets - found.layout.buckets {
                break;
            }
            let more = measure(kappa);
            if more.bits > payload_bits {
                break;
            }
            found = more;
        }
        Some(found)
    }

    /// The encoding's size for `hashes` with this layout: `n + Z` bits of buckets and
    /// `n * L - m` bits of low bits, with `n` the distinct fingerprints and `m` the buckets
    /// holding two or more. One pass without branches on the data (where buckets begin and
    /// end is too random to predict). A fingerprint counts as a repeat only when it equals
    /// the bucket's previous distinct one (in hash order), so a bucket of three or more can
    /// come out larger than it is: the result is an upper bound, exact for buckets of one
    /// or two, which still fits.
    ///
    /// (Counting every hash as distinct overstated the size where low bits are few and
    /// coincide often, and the builder chose fewer buckets than fit; `docs/compact-format.md`,
    /// "Building", has the cost in false positives.)
    fn measure(self, hashes: &[u64]) -> Fit {
        let (mut distinct, mut shared) = (0u64, 0u64);
        // The current bucket, its distinct fingerprints so far, and the last of them.
        let (mut current, mut count, mut last) = (u64::MAX, 0u64, 0u64);
        for &hash in hashes {
            let (bucket, low) = self.fingerprint(hash);
            let same = bucket == current;
            let new = !same | (low != last);
            distinct += u64::from(new);
            shared += u64::from(same & new & (count == 1));
            count = if same { count + u64::from(new) } else { 1 };
            last = low;
            current = bucket;
        }
        let bits =
            (distinct + self.buckets).saturating_add(distinct * u64::from(self.low_bits) - shared);
        Fit {
            layout: self,
            distinct,
            // No buckets: nothing can be stored.
            bits: if self.buckets == 0 { u64::MAX } else { bits },
        }
    }

    /// Calls `f(bucket, lows)` for each non-empty bucket in order, with its distinct low bits
    /// ascending. `hashes` are sorted and distinct, so buckets come in order. Fails only if
    /// a bucket of more than 16 (never seen from random keys) finds no memory to sort in.
    fn for_each_bucket(&self, hashes: &[u64], mut f: impl FnMut(u64, &[u64])) -> Result<(), Error> {
        let mask = self.low_mask();
        let mut large = Vec::new();
        let mut i = 0;
        // One fingerprint per hash: the one that ends a bucket starts the next.
        let mut next = hashes.first().map(|&h| self.fingerprint(h));
        while let Some((bucket, low)) = next {
            let mut end = i + 1;
            next = None;
            while let Some(&hash) = hashes.get(end) {
                let fingerprint = self.fingerprint(hash);
                if fingerprint.0 != bucket {
                    next = Some(fingerprint);
                    break;
                }
                end += 1;
            }
            match &hashes[i..end] {
                [_] => f(bucket, &[low]),
                &[a, b] => {
                    let pair = [(a & mask).min(b & mask), (a & mask).max(b & mask)];
                    f(bucket, &pair[..if pair[0] == pair[1] { 1 } else { 2 }])
                }
                group if group.len() <= 16 => {
                    let mut lows = [0u64; 16];
                    let lows = &mut lows[..group.len()];
                    lows.iter_mut().zip(group).for_each(|(l, h)| *l = h & mask);
                    lows.sort_unstable();
                    f(bucket, dedup(lows))
                }
                group => {
                    large.clear();
                    large
                        .try_reserve(group.len())
                        .map_err(|_| Error::OutOfMemory)?;
                    large.extend(group.iter().map(|h| h & mask));
                    large.sort_unstable();
                    f(bucket, dedup(&mut large))
                }
            }
            i = end;
        }
        Ok(())
    }

    /// Writes the buckets and low bits of `hashes` into the zeroed `payload`, which they fit.
    ///
    /// Format rule: fingerprint `i` (in `(bucket, low)` order, duplicates removed) sets bit
    /// `bucket + i` of the payload (bit `j` is bit `j % 8` of byte `j / 8`), so bucket `b`'s
    /// fingerprints are the run of ones after the `b`-th zero. Low bits are stored from the
    /// payload's end backwards, bucket by bucket: one fingerprint takes an `L`-bit field;
    /// the two smallest of a shared bucket one `2L - 1`-bit pair field, the others `L` bits
    /// each.
    pub(super) fn encode(&self, hashes: &[u64], payload: &mut [u8]) -> Result<(), Error> {
        let payload_bits = payload.len() as u64 * 8;
        let (mut rank, mut used) = (0u64, 0u64);
        self.for_each_bucket(hashes, |bucket, lows| {
            let ones = lows.len() as u64;
            if ones <= 56 {
                write_bits(payload, bucket + rank, ones as u32, (1 << ones) - 1);
            } else {
                (0..ones).for_each(|i| write_bits(payload, bucket + rank + i, 1, 1));
            }
            rank += ones;
            let mut put = |width: u32, value: u64| {
                used += u64::from(width);
                write_bits(payload, payload_bits - used, width, value);
            };
            let singles = match lows {
                [_] => lows,
                [a, b, rest @ ..] => {
                    put(2 * self.low_bits - 1, self.encode_pair(*a, *b));
                    rest
                }
                [] => &[],
            };
            for &low in singles {
                put(self.low_bits, low);
            }
        })
    }

    /// Format rule: two distinct lows `a < b` are stored as `x | e << L` with `e < 2^(L-1)`:
    /// `x = a, e = b - a - 1` if `b - a <= 2^(L-1)`, else `x = b, e = a + 2^L - b - 1`. The
    /// pair is `{x, (x + e + 1) mod 2^L}` either way.
    fn encode_pair(&self, a: u64, b: u64) -> u64 {
        let half = 1u64 << (self.low_bits - 1);
        let (x, e) = if b - a <= half {
            (a, b - a - 1)
        } else {
            (b, a + (1 << self.low_bits) - b - 1)
        };
        x | e << self.low_bits
    }
}

/// A layout measured on a key set.
#[derive(Debug, Clone, Copy)]
struct Fit {
    layout: Layout,
    /// Distinct fingerprints.
    distinct: u64,
    /// Bits the encoding needs.
    bits: u64,
}

impl Fit {
    /// `Z * 2^L`: the expected false-positive rate is `distinct` over it.
    fn score_numerator(&self) -> u128 {
        u128::from(self.layout.buckets) << self.layout.low_bits
    }

    /// Fewer expected false positives than `other` (compared without division).
    fn beats(&self, other: &Fit) -> bool {
        self.score_numerator() * u128::from(other.distinct.max(1))
            > other.score_numerator() * u128::from(self.distinct.max(1))
    }
}

/// Sorts `hashes`. Key hashes are spread evenly, so counting them into two slots per hash
/// by their top bits puts most in order, and an insertion sort finishes, faster than the
/// general sort, which mispredicts most of its comparisons (`docs/compact-format.md`,
/// "Building"). Hashes that crowd a few slots (not from a good hash) fall back to the
/// general sort.
pub(super) fn sort_hashes(hashes: &mut [u64]) -> Result<(), Error> {
    const ON_STACK: usize = 64;
    if hashes.len() <= ON_STACK {
        let mut sorted = [0u64; ON_STACK];
        let mut slots = [0u32; 2 * ON_STACK];
        sort_by_slots(hashes, &mut sorted, &mut slots);
        return Ok(());
    }
    let mut sorted = Vec::new();
    let mut slots = Vec::new();
    sorted
        .try_reserve_exact(hashes.len())
        .map_err(|_| Error::OutOfMemory)?;
    let slot_count = 2 * hashes.len().next_power_of_two();
    slots
        .try_reserve_exact(slot_count)
        .map_err(|_| Error::OutOfMemory)?;
    sorted.resize(hashes.len(), 0);
    slots.resize(slot_count, 0);
    sort_by_slots(hashes, &mut sorted, &mut slots);
    Ok(())
}

/// [`sort_hashes`] with `sorted` (at least as long as `hashes`) and `slots` (at least twice
/// the power of two from `hashes.len()`) to work in.
fn sort_by_slots(hashes: &mut [u64], sorted: &mut [u64], slots: &mut [u32]) {
    let n = hashes.len();
    if n < 2 {
        return;
    }
    let slot_bits = n.next_power_of_two().trailing_zeros() + 1;
    let slot = |hash: u64| (hash >> (64 - slot_bits)) as usize;
    let slots = &mut slots[..1 << slot_bits];
    slots.fill(0);
    for &hash in hashes.iter() {
        slots[slot(hash)] += 1;
    }
    let mut start = 0;
    for count in slots.iter_mut() {
        (*count, start) = (start, start + *count);
    }
    let sorted = &mut sorted[..n];
    for &hash in hashes.iter() {
        let at = &mut slots[slot(hash)];
        sorted[*at as usize] = hash;
        *at += 1;
    }
    let mut moves = 0;
    for i in 1..n {
        let hash = sorted[i];
        let mut j = i;
        while j > 0 && sorted[j - 1] > hash {
            sorted[j] = sorted[j - 1];
            j -= 1;
        }
        sorted[j] = hash;
        moves += i - j;
        if moves > 4 * n {
            sorted.sort_unstable();
            break;
        }
    }
    hashes.copy_from_slice(sorted);
}

/// The distinct values of the sorted `values`, moved to its front.
pub(super) fn dedup(values: &mut [u64]) -> &[u64] {
    let mut distinct = 0;
    for i in 0..values.len() {
        if distinct == 0 || values[i] != values[distinct - 1] {
            values[distinct] = values[i];
            distinct += 1;
        }
    }
    &values[..distinct]
}

/// ORs `value` (`width` bits, at most 56) into the zeroed bits from `at`.
fn write_bits(payload: &mut [u8], at: u64, width: u32, value: u64) {
    let byte = (at / 8) as usize;
    if let Some(window) = payload.get_mut(byte..byte + 8) {
        let word = u64::from_le_bytes(window.try_into().expect("8 bytes")) | value << (at % 8);
        window.copy_from_slice(&word.to_le_bytes());
        return;
    }
    // The payload's last bytes.
    let mut value = value << (at % 8);
    let mut bits = u64::from(width) + at % 8;
    let mut byte = byte;
    while bits > 0 {
        payload[byte] |= value as u8;
        value >>= 8;
        bits = bits.saturating_sub(8);
        byte += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_hashes_sorts_any_hashes() {
        let mut state = 1u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in (0..=130).chain([255, 256, 257, 1000, 5000]) {
            let spread: Vec<u64> = (0..n).map(|_| next()).collect();
            // Repeats, and hashes crowding a few slots (the fallback), and a sorted run.
            let repeats: Vec<u64> = (0..n).map(|_| next() % 3).collect();
            let crowded: Vec<u64> = (0..n).map(|_| next() >> 20).collect();
            let descending: Vec<u64> = (0..n as u64).rev().map(|i| i << 40).collect();
            for hashes in [spread, repeats, crowded, descending] {
                let mut ours = hashes.clone();
                sort_hashes(&mut ours).unwrap();
                let mut want = hashes;
                want.sort_unstable();
                assert_eq!(ours, want, "{n} hashes");
            }
        }
    }
}
