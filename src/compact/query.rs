//! Answering a query on a compact filter (`docs/compact-format.md`, "Query"): find the key's
//! bucket in the bucket bits, then compare its low bits with the bucket's fields.
//!
//! The query is generic over how a word's `k`-th set bit is found ([`Select`]): `cpu` picks
//! the fastest the processor has, once.

use super::layout::{Layout, key_hash};

/// Finding the `k`-th (from 0) set bit of a word that has more than `k`.
pub(super) trait Select {
    fn select(word: u64, k: u64) -> u32;
}

/// [`Select`] in portable code, without branches (Vigna, "Broadword implementation of
/// rank/select queries"): byte counts, their prefix sums by one multiplication, the byte by
/// comparing all eight sums at once, then the bit inside the byte from a table.
pub(super) struct Broadword;

impl Select for Broadword {
    #[inline(always)]
    fn select(word: u64, k: u64) -> u32 {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let mut bytes = word - ((word >> 1) & 0x5555_5555_5555_5555);
        bytes = (bytes & 0x3333_3333_3333_3333) + ((bytes >> 2) & 0x3333_3333_3333_3333);
        bytes = (bytes + (bytes >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        // Byte i of `sums`: set bits in bytes 0..=i (at most 64, so no carries).
        let sums = bytes.wrapping_mul(ONES);
        // High bit of byte i set where sums[i] <= k: those bytes come before the one wanted.
        let before = (((k * ONES) | HIGHS) - sums) & HIGHS;
        let byte = ((before >> 7).wrapping_mul(ONES) >> 56) as u32 * 8;
        let below = (sums << 8 >> byte) & 0xff;
        let in_byte = ((word >> byte) & 0xff) as usize;
        byte + u32::from(SELECT_IN_BYTE[in_byte][(k - below) as usize & 7])
    }
}

/// `SELECT_IN_BYTE[b][k]`: the position of the `k`-th set bit of byte `b` (0 past the last).
const SELECT_IN_BYTE: [[u8; 8]; 256] = {
    let mut table = [[0u8; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let (mut bit, mut k) = (0, 0);
        while bit < 8 {
            if byte >> bit & 1 == 1 {
                table[byte][k] = bit as u8;
                k += 1;
            }
            bit += 1;
        }
        byte += 1;
    }
    table
};

/// Whether `key` may be in the compact `filter` of the first version (2+ bytes, marker
/// >= 32). A filter whose structure is broken answers "may match".
#[inline(always)]
pub(super) fn may_match<S: Select>(key: &[u8], filter: &[u8]) -> bool {
    let hash = key_hash(key);
    let Some((&marker, payload)) = filter.split_last() else {
        return true;
    };
    if payload.len() < 8 {
        return short_may_match(hash, marker, payload);
    }
    payload_may_match::<S>(hash, marker, payload, payload.len() as u64 * 8)
}

/// [`may_match`] for a payload under 8 bytes (never built: the least is 64 bits), read
/// from a zero-padded copy so that the query reads whole words.
#[cold]
#[inline(never)]
fn short_may_match(hash: u64, marker: u8, payload: &[u8]) -> bool {
    let mut padded = [0u8; 8];
    padded[..payload.len()].copy_from_slice(payload);
    payload_may_match::<Broadword>(hash, marker, &padded, payload.len() as u64 * 8)
}

/// The query on the first `payload_bits` bits of `bytes` (at least 8 bytes; bits past
/// `payload_bits` are zero and not part of the payload).
#[inline(always)]
fn payload_may_match<S: Select>(hash: u64, marker: u8, bytes: &[u8], payload_bits: u64) -> bool {
    let layout = Layout::from_marker(marker, payload_bits);
    if layout.buckets == 0 {
        // Well formed only empty: no fingerprint has a bucket.
        return false;
    }
    let (bucket, low) = layout.fingerprint(hash);
    let Some(run) = bucket_run::<S>(bytes, payload_bits, bucket) else {
        return true;
    };
    let (width, mask) = (u64::from(layout.low_bits), layout.low_mask());
    let count = run.ones;
    // Low bits of buckets 0..=bucket, from the payload's end: L per fingerprint, one less per
    // pair field. The lowest of them is this bucket's last field, which must lie past the
    // bucket's zero.
    let used = (run.zero - bucket).saturating_mul(width) - run.pairs;
    let last_field = payload_bits.wrapping_sub(used);
    let in_place = used <= payload_bits && last_field > run.zero;
    // The bucket's first field (the pair field, or the single field in its low L bits), and
    // the one below it: 0 to 3 fingerprints are answered without branching on the data
    // (their positions are a coin toss per key); a field read for a smaller bucket, or out
    // of place, reads some other bits of the payload and is not used.
    let first = last_field.wrapping_add(count.saturating_sub(2).saturating_mul(width));
    let (pair, third) = if width <= 19 {
        // Both in one read: 3L - 1 bits from at most 7 bits into a byte.
        let from = first.saturating_sub(width);
        let window = read_bits(bytes, from);
        (window >> (first - from), window)
    } else {
        (
            read_bits(bytes, first),
            read_bits(bytes, first.wrapping_sub(width)),
        )
    };
    let x = pair & mask;
    let other = (x + ((pair >> width) & (mask >> 1)) + 1) & mask;
    let hit = (x == low) | ((count >= 2) & (other == low)) | ((count >= 3) & (third & mask == low));
    if count >= 4 && in_place && !hit {
        let mut at = first - width;
        return (3..count).any(|_| {
            at -= width;
            read_bits(bytes, at) & mask == low
        });
    }
    (count != 0) & (!in_place | hit)
}

/// Where a bucket's run of ones ends, in the bucket bits.
struct Run {
    /// The position of the bucket's zero (the `bucket`-th zero, counting from 0).
    zero: u64,
    /// The length of the run of ones just before it: the bucket's fingerprints.
    ones: u64,
    /// Buckets up to and including this one with two or more fingerprints (pair fields).
    pairs: u64,
}

/// Bits 8..64 of a window: the ones it adds to the previous window's.
const NEW_BITS: u64 = !0xff;

/// Bucket `bucket`'s run, found by counting zeros from the payload start, or `None` if the
/// payload's first `payload_bits` bits hold fewer than `bucket + 1` zeros. `bytes` is at
/// least 8 bytes long.
///
/// The bits are read in 64-bit windows 56 bits apart (window `j` is the 8 bytes at byte
/// `7 * j`): each window's top 56 bits are new and its low 8 repeat the previous window's
/// last byte, so a pattern that looks two bits back (a zero that ends a run of two or more
/// ones) needs nothing carried from one window to the next. The scan stops at the bucket's
/// window. (`docs/compact-format.md`, "Reading it fast", says what else was tried.)
#[inline(always)]
fn bucket_run<S: Select>(bytes: &[u8], payload_bits: u64, bucket: u64) -> Option<Run> {
    let (mut zeros_left, mut pairs) = (bucket, 0u64);
    // Window 0: all 64 bits are new (bits before the payload count as zeros).
    let first = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let valid = if payload_bits >= 64 {
        u64::MAX
    } else {
        (1 << payload_bits) - 1
    };
    let zeros = !first & valid;
    if zeros_left < u64::from(zeros.count_ones()) {
        return Some(run_in_window::<S>(
            bytes, first, 0, zeros, zeros_left, pairs,
        ));
    }
    zeros_left -= u64::from(zeros.count_ones());
    pairs += u64::from(pair_ends(first, zeros).count_ones());
    let mut start = 7;
    for window in bytes.windows(8).skip(7).step_by(7) {
        let window = u64::from_le_bytes(window.try_into().expect("8 bytes"));
        let zeros = !window & NEW_BITS;
        let count = u64::from(zeros.count_ones());
        if zeros_left < count {
            let base = 8 * start as u64;
            return Some(run_in_window::<S>(
                bytes, window, base, zeros, zeros_left, pairs,
            ));
        }
        zeros_left -= count;
        pairs += u64::from(pair_ends(window, zeros).count_ones());
        start += 7;
    }
    // The payload's last 8 bytes, for its bits past the last whole window (at least 8 bits
    // into them, so the pattern still sees two bits back).
    let counted = 8 * (start as u64 + 1);
    if counted >= payload_bits {
        return None;
    }
    let last = bytes.len() - 8;
    let window = u64::from_le_bytes(bytes[last..].try_into().expect("8 bytes"));
    let zeros = !window & (u64::MAX << (counted - 8 * last as u64));
    if zeros_left >= u64::from(zeros.count_ones()) {
        return None;
    }
    Some(run_in_window::<S>(
        bytes,
        window,
        8 * last as u64,
        zeros,
        zeros_left,
        pairs,
    ))
}

/// The `zeros` of `window` that end a run of two or more ones (the two bits below are ones).
#[inline(always)]
fn pair_ends(window: u64, zeros: u64) -> u64 {
    zeros & window << 1 & window << 2
}

/// The run ending at the `zeros_left`-th (from 0) of `zeros`, the new zeros of `window`,
/// whose bit 0 is payload bit `base`; `pairs` counts the pair fields before the new bits.
#[inline(always)]
fn run_in_window<S: Select>(
    bytes: &[u8],
    window: u64,
    base: u64,
    zeros: u64,
    zeros_left: u64,
    pairs: u64,
) -> Run {
    let bit = S::select(zeros, zeros_left);
    let through = u64::MAX >> (63 - bit);
    let pairs = pairs + u64::from((pair_ends(window, zeros) & through).count_ones());
    // The ones just below the zero; rarely they reach below the window.
    let mut ones = u64::from(((window << (63 - bit)) << 1).leading_ones());
    if ones == u64::from(bit) && base > 0 {
        ones += ones_before(bytes, base);
    }
    Run {
        zero: base + u64::from(bit),
        ones,
        pairs,
    }
}

/// The number of consecutive ones that end just before payload bit `end` (a multiple of 8).
#[cold]
fn ones_before(bytes: &[u8], end: u64) -> u64 {
    let mut ones = 0;
    for &byte in bytes[..(end / 8) as usize].iter().rev() {
        ones += u64::from(byte.leading_ones());
        if byte != 0xff {
            break;
        }
    }
    ones
}

/// The 64 bits of `bytes` (at least 8) from bit `at`, of which the caller uses at most
/// `64 - at % 8`, zero past the end. The 8-byte window is clamped to the last 8 bytes,
/// without a branch on where: it still holds any field that ends within `bytes`. A position
/// outside (a field the caller will not use, or a malformed filter) reads some other bits.
#[inline(always)]
fn read_bits(bytes: &[u8], at: u64) -> u64 {
    let byte = (at / 8).min(bytes.len() as u64 - 8) as usize;
    let window = u64::from_le_bytes(bytes[byte..byte + 8].try_into().expect("8 bytes"));
    window >> (at - 8 * byte as u64).min(63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadword_select_finds_every_set_bit() {
        let mut word = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..2000 {
            word = word.rotate_left(7).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
            let word = if round % 3 == 0 {
                word & (word >> 17)
            } else {
                word
            };
            let positions: Vec<u32> = (0..64).filter(|&i| word >> i & 1 == 1).collect();
            for (k, &position) in positions.iter().enumerate() {
                assert_eq!(
                    Broadword::select(word, k as u64),
                    position,
                    "{word:#x} k {k}"
                );
            }
        }
    }
}
