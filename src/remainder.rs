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

/// `ceil(2^64 / (8 * bytes))` from [`RECIPROCALS`], for `1 <= bytes < 2048`.
#[inline]
pub(crate) fn tabled_reciprocal(bytes: usize) -> Option<u64> {
    RECIPROCALS.get(bytes).copied().filter(|&m| m != 0)
}

/// Finds where a 32-bit hash falls in a bit array of whole bytes: `h % bits` with
/// `bits = 8 * bytes`, as a byte index and a bit within that byte.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Remainder {
    bytes: u64,
    /// `ceil(2^64 / bits)`, or 0 when `bits` exceeds `u32::MAX` and `h % bits == h`.
    reciprocal: u64,
}

impl Remainder {
    /// For an array of `bytes >= 1` bytes.
    #[inline]
    pub(crate) fn new(bytes: usize) -> Self {
        debug_assert!(bytes >= 1);
        let bytes = bytes as u64;
        let reciprocal = if bytes < TABLE_BYTES as u64 {
            RECIPROCALS[bytes as usize]
        } else if bytes > u64::from(u32::MAX) / 8 {
            0
        } else {
            u64::MAX / (8 * bytes) + 1
        };
        Remainder { bytes, reciprocal }
    }

    /// `(h % bits) / 8` and `(h % bits) % 8`. With `low = M * h mod 2^64`,
    /// `h % bits = (low * 8 * bytes) >> 64`; taking `low * bytes` as a 128-bit product, that
    /// is `8 * high + (its low word >> 61)`: the high word is the byte, the top three bits of
    /// the low word the bit, with no shifting or masking of the remainder.
    #[inline]
    pub(crate) fn byte_and_bit(self, h: u32) -> (usize, u32) {
        if self.reduces() {
            self.reduced_byte_and_bit(h)
        } else {
            ((h / 8) as usize, h % 8)
        }
    }

    /// Whether `h % bits` can differ from `h`: the array has fewer than 2^32 bits.
    #[inline]
    pub(crate) fn reduces(self) -> bool {
        self.reciprocal != 0
    }

    /// [`byte_and_bit`](Self::byte_and_bit) where [`reduces`](Self::reduces), without
    /// checking it, so that a probe loop asked once has no branch per probe.
    #[inline]
    pub(crate) fn reduced_byte_and_bit(self, h: u32) -> (usize, u32) {
        let low = self.reciprocal.wrapping_mul(u64::from(h));
        let product = u128::from(low) * u128::from(self.bytes);
        ((product >> 64) as usize, ((product as u64) >> 61) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes() -> impl Iterator<Item = u32> {
        [0, 1, 2, 7, 8, 63, 64, u32::MAX, u32::MAX - 1, 1 << 31]
            .into_iter()
            .chain((0..if cfg!(miri) { 50 } else { 2000u32 }).map(|i| i.wrapping_mul(0x9e37_79b9)))
    }

    #[test]
    fn equals_the_remainder_operator() {
        // Bit counts; arrays are whole bytes, so each is rounded down to one.
        // Under Miri, which interprets each instruction, the first 200 sizes of the 4096.
        let small = if cfg!(miri) { 200 } else { 4096 };
        let mut sizes: Vec<u64> = (1..=small).map(|bytes| bytes * 8).collect();
        sizes.extend([u64::from(u32::MAX), 1 << 32, (1 << 32) + 8, 1 << 40]);
        sizes.extend(
            (0..32)
                .map(|s| u64::from(u32::MAX) >> s)
                .filter(|&b| b >= 8),
        );
        // Arrays a 32-bit address space cannot hold are left out there.
        for bits in sizes.into_iter().map(|bits| bits / 8 * 8) {
            let Ok(bytes) = usize::try_from(bits / 8) else {
                continue;
            };
            let r = Remainder::new(bytes);
            for h in hashes() {
                let (byte, bit) = r.byte_and_bit(h);
                assert!(bit < 8);
                assert_eq!(
                    8 * byte as u64 + u64::from(bit),
                    u64::from(h) % bits,
                    "h {h} bits {bits}"
                );
            }
        }
    }
}
