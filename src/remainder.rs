//! `h % bits` for the Bloom filter's probes, without a division per probe.
//!
//! LevelDB takes each probe position as `h % bits`. A division costs tens of cycles; this
//! computes the same remainder with two multiplications (Lemire, Kaser and Kurz, "Faster
//! Remainder by Direct Computation", 2019): with `M = ceil(2^64 / d)`,
//! `a % d == ((M * a mod 2^64) * d) >> 64` for every 32-bit `a` and `d`. An array of 2^32
//! bits or more needs no reduction at all: a 32-bit `h` is already below it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Takes 32-bit hashes modulo a filter's bit count, exactly as `h % bits` does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Remainder {
    bits: u64,
    /// `ceil(2^64 / bits)`, or 0 when `bits` exceeds `u32::MAX` and `h % bits == h`.
    reciprocal: u64,
}

impl Remainder {
    /// For a bit array of `bits >= 2` bits (filters have at least 8). Costs one division.
    pub(crate) fn new(bits: u64) -> Self {
        debug_assert!(bits >= 2);
        let reciprocal = if bits > u64::from(u32::MAX) {
            0
        } else {
            u64::MAX / bits + 1
        };
        Remainder { bits, reciprocal }
    }

    /// `h % bits`.
    #[inline]
    pub(crate) fn of(self, h: u32) -> u64 {
        if self.reciprocal == 0 {
            return u64::from(h);
        }
        let low = self.reciprocal.wrapping_mul(u64::from(h));
        ((u128::from(low) * u128::from(self.bits)) >> 64) as u64
    }

    /// Whether `reciprocal` is `ceil(2^64 / bits)`: `(M - 1) * bits < 2^64 <= M * bits`.
    fn is_reciprocal_of(reciprocal: u64, bits: u64) -> bool {
        let product = u128::from(reciprocal) * u128::from(bits);
        product >= 1 << 64 && product - u128::from(bits) < 1 << 64
    }
}

/// Remembers the reciprocals of recent filter sizes, so that a query need not divide.
/// Entries are checked on every use, so a stale or torn entry costs a division, never a
/// wrong remainder; threads share the cache without locks.
#[derive(Debug, Default)]
pub(crate) struct ReciprocalCache {
    entries: [AtomicU64; 16],
}

impl ReciprocalCache {
    /// The remainder for `bits`, from the cache if it holds the right reciprocal.
    #[inline]
    pub(crate) fn remainder(&self, bits: u64) -> Remainder {
        if bits > u64::from(u32::MAX) {
            return Remainder::new(bits);
        }
        // Filter sizes are multiples of 8 bits; the bits above say which size it is.
        let entry = &self.entries[(bits >> 3) as usize % 16];
        let cached = entry.load(Relaxed);
        if Remainder::is_reciprocal_of(cached, bits) {
            return Remainder {
                bits,
                reciprocal: cached,
            };
        }
        let remainder = Remainder::new(bits);
        entry.store(remainder.reciprocal, Relaxed);
        remainder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes() -> impl Iterator<Item = u32> {
        [0, 1, 2, 7, 8, 63, 64, u32::MAX, u32::MAX - 1, 1 << 31]
            .into_iter()
            .chain((0..2000u32).map(|i| i.wrapping_mul(0x9e37_79b9)))
    }

    #[test]
    fn equals_the_remainder_operator() {
        let mut sizes: Vec<u64> = (1..=4096).map(|bytes| bytes * 8).collect();
        sizes.extend([u64::from(u32::MAX), 1 << 32, (1 << 32) + 8, 1 << 40]);
        sizes.extend(
            (0..32)
                .map(|s| (u64::from(u32::MAX) >> s) & !7)
                .filter(|&b| b >= 8),
        );
        for bits in sizes {
            let r = Remainder::new(bits);
            for h in hashes() {
                assert_eq!(r.of(h), u64::from(h) % bits, "h {h} bits {bits}");
            }
        }
    }

    #[test]
    fn cache_never_answers_with_a_wrong_reciprocal() {
        let cache = ReciprocalCache::default();
        // Sizes that share cache entries, asked alternately.
        for round in 0..3 {
            for bits in [64u64, 64 + 128, 64 + 256, 8 * 1000, 8 * 1016, 1 << 35] {
                let r = cache.remainder(bits);
                for h in hashes() {
                    assert_eq!(r.of(h), u64::from(h) % bits, "round {round} bits {bits}");
                }
            }
        }
        // A corrupted entry is recomputed, not used.
        cache.entries[8].store(12345, Relaxed);
        assert_eq!(cache.remainder(64).of(1000), 1000 % 64);
    }
}
