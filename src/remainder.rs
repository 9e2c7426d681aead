//! `h % bits` for the Bloom filter's probes, without a division per probe.
//!
//! LevelDB takes each probe position as `h % bits`. A division costs tens of cycles; this
//! computes the same remainder with two multiplications (Lemire, Kaser and Kurz, "Faster
//! Remainder by Direct Computation", 2019): with `M = ceil(2^64 / d)`,
//! `a % d == ((M * a mod 2^64) * d) >> 64` for every 32-bit `a` and `d`. An array of 2^32
//! bits or more needs no reduction at all: a 32-bit `h` is already below it.

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
}
