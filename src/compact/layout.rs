//! The compact format's constants, its key hash, and the fingerprint layout of a filter:
//! what its marker byte and payload size fix.

use crate::xxh3::xxh3_64;

/// The smallest marker byte of a filter of the format's first version (31 is the second
/// version's, smaller last bytes are LevelDB's).
pub(super) const FIRST_VERSION_MARKER_MIN: u8 = 32;

/// The most low bits a fingerprint can keep (the marker byte has room for 1 to 28).
pub const MAX_LOW_BITS: u32 = 28;

/// Bucket-count choices per low-bit width (`kappa` in the specification).
pub(super) const KAPPAS: u32 = 8;

/// The key hash of the format. Format rule: `XXH3_64bits(key)` (XXH3, 64-bit, seed 0).
#[inline(always)]
pub fn key_hash(key: &[u8]) -> u64 {
    xxh3_64(key)
}

/// The fingerprint layout of one filter: what the marker byte and the payload size fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    /// `L`: low bits per fingerprint, 1 to 28.
    pub(super) low_bits: u32,
    /// `kappa`: which of the bucket counts for this `L`, 0 to 7.
    pub(super) kappa: u32,
    /// `Z`: the number of buckets.
    pub(super) buckets: u64,
}

/// `ceil(2^64 / (8 * (L + 2)))` for each `L` (a table: a division costs more than the rest
/// of the bucket count).
const BUCKET_RECIPROCALS: [u64; MAX_LOW_BITS as usize + 1] = {
    let mut table = [0; MAX_LOW_BITS as usize + 1];
    let mut low_bits = 0;
    while low_bits < table.len() {
        table[low_bits] = u64::MAX / (KAPPAS as u64 * (low_bits as u64 + 2)) + 1;
        low_bits += 1;
    }
    table
};

impl Layout {
    /// Format rule: `Z = floor(P * (8 + kappa) / (8 * (L + 2)))` with `P` the payload bits.
    pub(super) fn new(payload_bits: u64, low_bits: u32, kappa: u32) -> Layout {
        let divisor = u64::from(KAPPAS * (low_bits + 2));
        let product = u128::from(payload_bits) * u128::from(KAPPAS + kappa);
        // Every query computes Z: below 2^44 a multiplication by the rounded-up reciprocal
        // gives the exact quotient (its error, under product / 2^64 < 2^-20, cannot reach
        // the next multiple of 1/divisor >= 1/240); above, a real division.
        let buckets = if product < 1 << 44 {
            let reciprocal = BUCKET_RECIPROCALS[low_bits as usize];
            ((product * u128::from(reciprocal)) >> 64) as u64
        } else {
            // Z <= P < 2^64.
            (product / u128::from(divisor)) as u64
        };
        Layout {
            low_bits,
            kappa,
            buckets,
        }
    }

    /// Format rule: the marker is `32 + 8 * (L - 1) + kappa`.
    pub(super) fn from_marker(marker: u8, payload_bits: u64) -> Layout {
        let code = u32::from(marker - FIRST_VERSION_MARKER_MIN);
        Layout::new(payload_bits, code / KAPPAS + 1, code % KAPPAS)
    }

    pub(super) fn marker(&self) -> u8 {
        (u32::from(FIRST_VERSION_MARKER_MIN) + KAPPAS * (self.low_bits - 1) + self.kappa) as u8
    }

    pub(super) fn low_mask(&self) -> u64 {
        (1 << self.low_bits) - 1
    }

    /// Format rule: a fingerprint is `(bucket, low)` with `bucket = (h * Z) >> 64` (the high
    /// 64 bits of the 128-bit product) and `low = h mod 2^L`.
    pub(super) fn fingerprint(&self, hash: u64) -> (u64, u64) {
        let bucket = ((u128::from(hash) * u128::from(self.buckets)) >> 64) as u64;
        (bucket, hash & self.low_mask())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_count_by_reciprocal_equals_division() {
        let mut payload_bits = 1u64;
        while payload_bits < 1 << 41 {
            for p in [
                payload_bits - 1,
                payload_bits,
                payload_bits + 7,
                payload_bits * 3 + 5,
            ] {
                for low_bits in 1..=MAX_LOW_BITS {
                    for kappa in 0..KAPPAS {
                        let exact = u128::from(p) * u128::from(KAPPAS + kappa)
                            / u128::from(KAPPAS * (low_bits + 2));
                        let layout = Layout::new(p, low_bits, kappa);
                        assert_eq!(u128::from(layout.buckets), exact, "P {p} L {low_bits}");
                    }
                }
            }
            payload_bits = payload_bits * 5 / 4 + 1;
        }
    }

    #[test]
    fn markers_round_trip_and_stay_in_range() {
        for low_bits in 1..=MAX_LOW_BITS {
            for kappa in 0..KAPPAS {
                let layout = Layout::new(1000, low_bits, kappa);
                let marker = layout.marker();
                assert!(marker >= FIRST_VERSION_MARKER_MIN);
                assert_eq!(Layout::from_marker(marker, 1000), layout);
            }
        }
        assert_eq!(Layout::new(1000, MAX_LOW_BITS, KAPPAS - 1).marker(), 255);
    }
}
