//! The compact format: a standard ribbon filter (Dillinger and Walzer, "Ribbon filter:
//! practically smaller than Bloom and Xor", 2021) with fractional result bits.
//! `docs/compact-format.md` is the specification; this comment is its summary.
//!
//! What it computes. Each key is one linear equation over GF(2): `w` coefficient bits at a
//! hashed start slot, and hashed result bits. The filter stores a solution of all its keys'
//! equations; a key may match when its equations hold, and an absent key satisfies a random
//! equation of `r` result bits with probability `2^-r`.
//!
//! Layout (long form, 48 bytes or more): `payload ++ [lo, hi, 31]`, `P` payload bits,
//! `v = lo | hi << 8`: `r = (v & 31) + 1`, `seed = (v >> 5) & 3`, `share = (v >> 7) & 3`,
//! `trim = v >> 9`; `m0 = floor(P / r)`, `m = m0 - floor(m0 * trim / 512)` slots,
//! `e = P - r * m` extra slots. The short form, under 48 bytes, keeps one byte `v`
//! (`payload ++ [v, 31]`): `share = 2`, and `less = v >> 7` takes a step of slots off `m0`.
//! The main part is `r` columns of `m` bits (column `j` at payload bit `j * m`), the solution
//! of every key's `r`-bit equation. The extra part, the last `e` bits, is a one-column ribbon
//! of its own holding one more result bit for a hashed share of the keys, about
//! `(e / m) * SHARES[share] / 16`: those keys get `r + 1` result bits. So the rate,
//! `2^-r (1 - f / 2)` for a share `f` of keys with the extra bit, moves smoothly with the
//! bits per key instead of in whole steps.
//!
//! Why two parts: a share of keys with one more result bit needs a column that only they
//! constrain. Giving it to the keys that start late in the main part (as RocksDB's
//! "Standard128Ribbon" does with blocks of more columns) leaves its last `w - 1` slots to no
//! key, which is a tenth of a filter of 100 keys; a ribbon of its own has no such tail.
//!
//! Widths: `w = min(m, 57)` (one 8-byte read a window, rows of 64 bits); filters of 2,048
//! bytes or more ([`WIDE_FROM`]) take `w = min(m, 120)` (16-byte reads, rows of 128 bits),
//! whose band needs far fewer spare slots in filters of thousands of keys.
//!
//! Costs. A query hashes the key once (XXH3-64) and reads `r + 1` windows, one parity each,
//! with no branch on the key. A build bands every key into the main part and the selected
//! keys into the extra part (Gaussian elimination along the band, three keys walking at once),
//! then solves each part from its last slot to its first.
//!
//! Files: `shape.rs` holds the format's rules (what the length and trailer fix, a key's
//! equations, the rate), `row.rs` the rows of both widths, `query.rs` the query, `builder.rs`
//! the builder's choices and its elimination; this file chooses the version compiled for the
//! processor's instructions.

mod builder;
mod columns;
mod query;
mod row;
mod shape;
#[cfg(test)]
mod tests;

use xxhash_rust::xxh3::xxh3_64;

use crate::cpu::Instructions;
use builder::build_filter;
pub(super) use builder::modelled_rate;
use columns::OneAtATime;
use query::{batch_may_match, may_match};
pub(super) use shape::expected_false_positive_rate;

/// The last byte of a ribbon filter. LevelDB reads it as a Bloom filter with 31 probes,
/// which it answers with "may match".
pub const MARKER: u8 = 31;

/// Filters shorter than this many bytes keep their parameters in one byte (`[v, 31]`, the
/// short form); longer ones in two (`[lo, hi, 31]`, the long form). A byte is 6% of a
/// filter of 16 bytes, and small filters need less choice of shape.
pub(super) const SHORT_BELOW: usize = 48;

/// The trailer's length for a filter of `len` bytes: the parameters and [`MARKER`].
#[inline(always)]
pub(super) fn trailer_len(len: usize) -> usize {
    if len < SHORT_BELOW { 2 } else { 3 }
}

/// The most result bits (`r`) a filter's main part has: five bits of `v`.
pub(super) const MAX_RESULT_BITS: u32 = 32;

/// Seeds a builder tries for one slot count: two bits of `v`.
pub(super) const SEEDS: u32 = 4;

/// The extra part's share of keys, in sixteenths of `e / m`, by `share`.
pub(super) const SHARES: [u64; 4] = [16, 14, 12, 8];

/// Filters of this many bytes or more have wide windows (up to 120 bits, 57 below): in
/// filters of thousands of keys a narrow band needs ever more spare slots, a wide one few
/// (the builder's `spare_slots` gives both).
pub(super) const WIDE_FROM: usize = 2048;

/// Whether `key` may be in the ribbon `filter` (2 or more bytes, the last [`MARKER`]), by
/// the version of the query compiled for `level`.
#[inline(always)]
#[allow(unsafe_code)] // calls the version compiled for the processor's level
pub(super) fn key_may_match(level: Instructions, key: &[u8], filter: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if level.has_avx512() {
            // SAFETY: `level` says the processor has AVX-512 F, DQ, BW, VL, VBMI and VPOPCNTDQ,
            // AVX2, BMI1, BMI2 and popcnt.
            return unsafe { x86::key_may_match_avx512(key, filter) };
        }
        if level.has_avx2() {
            // SAFETY: `level` says the processor has AVX2, BMI1, BMI2 and popcnt.
            return unsafe { x86::key_may_match_avx2(key, filter) };
        }
        if level.has_popcnt() {
            // SAFETY: `level` says the processor has popcnt.
            return unsafe { x86::key_may_match_popcnt(key, filter) };
        }
    }
    let _ = level;
    key_may_match_portable(key, filter)
}

/// Answers `keys` against one ribbon `filter` into `results` (pairs in order, as many as the
/// shorter has), by the version compiled for `level`: the filter's shape is read once.
#[allow(unsafe_code)] // calls the version compiled for the processor's level
pub(super) fn keys_may_match<'k>(
    level: Instructions,
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if level.has_avx512() {
            // SAFETY: `level` says the processor has AVX-512 F, DQ, BW, VL, VBMI and VPOPCNTDQ,
            // AVX2, BMI1, BMI2 and popcnt.
            return unsafe { x86::keys_may_match_avx512(keys, filter, results) };
        }
        if level.has_avx2() {
            // SAFETY: `level` says the processor has AVX2, BMI1, BMI2 and popcnt.
            return unsafe { x86::keys_may_match_avx2(keys, filter, results) };
        }
        if level.has_popcnt() {
            // SAFETY: `level` says the processor has popcnt.
            return unsafe { x86::keys_may_match_popcnt(keys, filter, results) };
        }
    }
    let _ = level;
    batch_may_match(keys, filter, results, OneAtATime)
}

/// The query in the target's baseline instructions. (Each version is a function of its
/// own, so that the dispatch inlines into the caller without the versions' stack frames.)
#[inline(never)]
fn key_may_match_portable(key: &[u8], filter: &[u8]) -> bool {
    may_match(xxh3_64(key), filter, OneAtATime)
}

/// Writes a ribbon filter for `hashes` into `filter` ([`build_filter`]), by the version
/// compiled for `level`.
#[allow(unsafe_code)] // calls the version compiled for the processor's level
pub(super) fn build(level: Instructions, hashes: &[u64], filter: &mut [u8]) -> bool {
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
    use super::columns::{Avx2, Avx512};
    use super::{OneAtATime, batch_may_match, build_filter, may_match, xxh3_64};

    /// A level's single and batch queries: both compiled for its instructions (`$features`),
    /// each reading windows its own way.
    macro_rules! queries {
        ($single:ident($one:expr), $batch:ident($many:expr), $($features:literal),+) => {
            $(#[target_feature(enable = $features)])+
            pub(super) fn $single(key: &[u8], filter: &[u8]) -> bool {
                may_match(xxh3_64(key), filter, $one)
            }

            $(#[target_feature(enable = $features)])+
            pub(super) fn $batch<'k>(
                keys: impl IntoIterator<Item = &'k [u8]>,
                filter: &[u8],
                results: &mut [bool],
            ) {
                batch_may_match(keys, filter, results, $many)
            }
        };
    }

    queries!(
        key_may_match_avx512(Avx512::single()),
        keys_may_match_avx512(Avx512::new()),
        "avx512f,avx512dq,avx512bw,avx512vl,avx512vbmi,avx512vpopcntdq",
        "avx2,popcnt,bmi1,bmi2"
    );
    queries!(
        key_may_match_avx2(Avx2::new()),
        keys_may_match_avx2(Avx2::new()),
        "avx2,popcnt,bmi1,bmi2"
    );
    queries!(
        key_may_match_popcnt(OneAtATime),
        keys_may_match_popcnt(OneAtATime),
        "popcnt"
    );

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
