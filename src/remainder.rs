//! `h % bits` for the Bloom filter's probes, without a division per probe.
//!
//! LevelDB takes each probe position as `h % bits`. A division costs tens of cycles; this
//! computes the same remainder with two multiplications (Lemire, Kaser and Kurz, "Faster
//! Remainder by Direct Computation", 2019): with `M = ceil(2^64 / d)`,
//! `a % d == ((M * a mod 2^64) * d) >> 64` for every 32-bit `a` and `d`. An array of 2^32
//! bits or more needs no reduction at all: a 32-bit `h` is already below it.
//!
//! `M` is found per query, with nothing remembered between queries: read from a table
//! computed at compile time for the filter sizes most tables hold, divided out otherwise (the
//! division does not depend on the key, so it overlaps the hash).

/// Filters of fewer bytes than this take their reciprocal from [`RECIPROCALS`].
const TABLE_BYTES: usize = 2048;

/// `ceil(2^64 / (8 * bytes))` for each bit array of `bytes` bytes (entry 0 unused): a load
/// where a short key's hash would otherwise wait for a 64-bit division.
static RECIPROCALS: [u64; TABLE_BYTES] = {
    let mut table = [0; TABLE_BYTES];
    let mut bytes = 1;
    while bytes < TABLE_BYTES {
        table[bytes] = u64::MAX / (8 * bytes as u64) + 1;
        bytes += 1;
    }
    table
};

/// Takes 32-bit hashes modulo a filter's bit count, exactly as `h % bits` does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Remainder {
    bits: u64,
    /// `ceil(2^64 / bits)`, or 0 when `bits` exceeds `u32::MAX` and `h % bits == h`.
    reciprocal: u64,
}

impl Remainder {
    /// For a bit array of `bits >= 2` bits (filters have at least 8).
    #[inline]
    pub(crate) fn new(bits: u64) -> Self {
        debug_assert!(bits >= 2);
        let reciprocal = if bits % 8 == 0 && bits < 8 * TABLE_BYTES as u64 {
            RECIPROCALS[(bits / 8) as usize]
        } else if bits > u64::from(u32::MAX) {
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
