//! The compact query compiled for the processor it runs on, chosen once per process.
//!
//! The query counts bits in each word of the bucket part before its bucket and then finds
//! one set bit by rank (`query::Select`). The x86-64 baseline that Rust targets has neither
//! a popcount instruction nor `pdep`, which make the query markedly faster
//! (`docs/compact-format.md`, "Reading it fast"), so the query is also compiled for them:
//!
//! | level | instructions | select |
//! |---|---|---|
//! | `Pdep` | popcnt, bmi1, bmi2, lzcnt | `tzcnt(pdep(1 << k, word))` |
//! | `Popcnt` | popcnt | broadword |
//! | `Portable` | the target's baseline | broadword |
//!
//! `pdep` takes 3 cycles on Intel processors since Haswell and AMD ones since Zen 3, but is
//! microcoded on AMD's Zen 1 and 2 (and Hygon's Dhyana), where it takes up to hundreds of
//! cycles: there the query stays at `Popcnt`.
//!
//! Ribbon filters (the format's second version) are built and queried with a parity per
//! column and slot: at `Popcnt` and `Pdep` both are compiled with popcount (the query at
//! `Pdep` also with BMI2's shifts).

#![allow(unsafe_code)] // target-feature versions of the query, chosen at run time

use std::sync::atomic::{AtomicU8, Ordering};

use super::layout::key_hash;
use super::query::{self, Broadword};
use super::ribbon;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Portable = 1,
    #[cfg(target_arch = "x86_64")]
    Popcnt = 2,
    #[cfg(target_arch = "x86_64")]
    Pdep = 3,
}

/// The level found by the first query (0: not yet).
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Whether `key` may be in the compact `filter` of the first version (2+ bytes, marker
/// >= 32), by the fastest version of the query this processor runs.
#[inline(always)]
pub(super) fn may_match(key: &[u8], filter: &[u8]) -> bool {
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level` returns `Pdep` only when the processor has every feature
        // `may_match_pdep` is compiled for.
        Level::Pdep => unsafe { may_match_pdep(key, filter) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: likewise for `Popcnt` and `may_match_popcnt`.
        Level::Popcnt => unsafe { may_match_popcnt(key, filter) },
        Level::Portable => may_match_portable(key, filter),
    }
}

/// Whether `key` may be in the ribbon `filter` (2+ bytes, marker 31), compiled for the
/// popcount instruction where the processor has it.
#[inline(always)]
pub(super) fn ribbon_may_match(key: &[u8], filter: &[u8]) -> bool {
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level` returns `Pdep` only when the processor has BMI2 and popcnt.
        Level::Pdep => unsafe { ribbon_may_match_bmi2(key, filter) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: likewise for `Popcnt` and popcnt.
        Level::Popcnt => unsafe { ribbon_may_match_popcnt(key, filter) },
        Level::Portable => ribbon_may_match_portable(key, filter),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,bmi2")]
fn ribbon_may_match_bmi2(key: &[u8], filter: &[u8]) -> bool {
    ribbon::may_match(key_hash(key), filter)
}

#[inline(never)]
fn ribbon_may_match_portable(key: &[u8], filter: &[u8]) -> bool {
    ribbon::may_match(key_hash(key), filter)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn ribbon_may_match_popcnt(key: &[u8], filter: &[u8]) -> bool {
    ribbon::may_match(key_hash(key), filter)
}

/// Writes a ribbon filter (`ribbon::build`), compiled for the popcount instruction where
/// the processor has it: the back-substitution is a parity per column and slot.
pub(super) fn build_ribbon(hashes: &[u64], filter: &mut [u8]) -> bool {
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level` returns these only when the processor has popcnt.
        Level::Pdep | Level::Popcnt => unsafe { build_ribbon_popcnt(hashes, filter) },
        Level::Portable => build_ribbon_portable(hashes, filter),
    }
}

#[inline(never)]
fn build_ribbon_portable(hashes: &[u64], filter: &mut [u8]) -> bool {
    ribbon::build(hashes, filter)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn build_ribbon_popcnt(hashes: &[u64], filter: &mut [u8]) -> bool {
    ribbon::build(hashes, filter)
}

/// The level, detected by the first call. (Each version is a function of its own, so
/// that this dispatch inlines into the caller without the versions' stack frames.)
#[inline(always)]
fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        #[cfg(target_arch = "x86_64")]
        3 => Level::Pdep,
        #[cfg(target_arch = "x86_64")]
        2 => Level::Popcnt,
        1 => Level::Portable,
        _ => first_level(),
    }
}

#[cold]
#[inline(never)]
fn first_level() -> Level {
    // Racing first queries all detect the same level.
    let found = detect();
    LEVEL.store(found as u8, Ordering::Relaxed);
    found
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Level {
    use std::arch::is_x86_feature_detected as has;
    if crate::cpu::portable_only() {
        Level::Portable
    } else if has!("popcnt") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && fast_pdep() {
        Level::Pdep
    } else if has!("popcnt") {
        Level::Popcnt
    } else {
        Level::Portable
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Level {
    Level::Portable
}

/// Whether `pdep` is a fast instruction here: not on AMD (or Hygon) family 0x17 (Zen 1, 2)
/// or earlier.
#[cfg(target_arch = "x86_64")]
fn fast_pdep() -> bool {
    use std::arch::x86_64::__cpuid;
    // SAFETY: every x86-64 processor has `cpuid`, with leaves 0 and 1. (Recent Rust releases
    // declare the intrinsic safe, older ones unsafe.)
    #[allow(unused_unsafe)]
    let (vendor, signature) = unsafe { (__cpuid(0), __cpuid(1).eax) };
    let word = |name: &[u8; 4]| u32::from_le_bytes(*name);
    let vendor = [vendor.ebx, vendor.edx, vendor.ecx];
    let amd_like = vendor == [word(b"Auth"), word(b"enti"), word(b"cAMD")]
        || vendor == [word(b"Hygo"), word(b"nGen"), word(b"uine")];
    // Family: the base family, plus the extended family when the base is 0xf.
    let base = (signature >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((signature >> 20) & 0xff)
    } else {
        base
    };
    !amd_like || family >= 0x19
}

/// The query in the target's baseline instructions.
#[inline(never)]
fn may_match_portable(key: &[u8], filter: &[u8]) -> bool {
    query::may_match::<Broadword>(key, filter)
}

/// The query compiled for processors with fast `pdep`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,bmi2,lzcnt")]
fn may_match_pdep(key: &[u8], filter: &[u8]) -> bool {
    query::may_match::<Pdep>(key, filter)
}

/// The query compiled to use the popcount instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn may_match_popcnt(key: &[u8], filter: &[u8]) -> bool {
    query::may_match::<Broadword>(key, filter)
}

/// [`query::Select`] by `pdep`: deposit a single one at the `k`-th set bit of `word`.
#[cfg(target_arch = "x86_64")]
struct Pdep;

#[cfg(target_arch = "x86_64")]
impl query::Select for Pdep {
    #[inline(always)]
    fn select(word: u64, k: u64) -> u32 {
        // SAFETY: `Pdep` is used only by `may_match_pdep`, into which this is inlined, which
        // is compiled for BMI2 and called only on processors that have it.
        unsafe { std::arch::x86_64::_pdep_u64(1 << k, word) }.trailing_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CompactPolicy, FilterFormat};

    /// Every version this processor can run answers every query alike (the one chosen is
    /// compared with the documented rules by `tests/compact_spec.rs`), on built filters and
    /// on the same filters with bits flipped.
    #[test]
    fn every_version_answers_alike() {
        let versions = available_versions();
        let mut state = 0x5eed_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 11
        };
        let mut compared = 0;
        for n in (0..70).chain([100, 200, 500, 1000]) {
            for bits_per_key in [3.0, 6.0, 10.0, 16.0, 25.0] {
                let keys: Vec<[u8; 8]> = (0..n).map(|_| next().to_le_bytes()).collect();
                let mut filter = Vec::new();
                CompactPolicy::new(bits_per_key)
                    .unwrap()
                    .create_filter(&keys, &mut filter)
                    .unwrap();
                for flips in 0..3 {
                    for _ in 0..flips {
                        let at = (next() % filter.len() as u64) as usize;
                        filter[at] ^= 1 << (next() % 8);
                    }
                    let last = filter.len() - 1;
                    filter[last] |= 0x20;
                    for probe in keys
                        .iter()
                        .map(|k| k.to_vec())
                        .chain((0..50).map(|_| next().to_le_bytes().to_vec()))
                    {
                        let answers: Vec<bool> =
                            versions.iter().map(|v| v(&probe, &filter)).collect();
                        assert!(
                            answers.iter().all(|&a| a == answers[0]),
                            "{answers:?}: n {n}, bpk {bits_per_key}, filter {filter:02x?}, key {probe:02x?}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 100_000);
    }

    /// Every compiled version of the ribbon build writes the same bytes, and every version of
    /// the ribbon query answers alike, on built filters and with bits flipped.
    #[test]
    fn every_ribbon_version_builds_and_answers_alike() {
        let mut builds: Vec<Build> = vec![build_ribbon_portable];
        let mut queries: Vec<Query> = vec![ribbon_may_match_portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the processor has popcnt.
                builds.push(|hashes, filter| unsafe { build_ribbon_popcnt(hashes, filter) });
                // SAFETY: likewise.
                queries.push(|key, filter| unsafe { ribbon_may_match_popcnt(key, filter) });
            }
            use std::arch::is_x86_feature_detected as has;
            if has!("popcnt") && has!("bmi1") && has!("bmi2") {
                // SAFETY: the processor has popcnt, BMI1 and BMI2.
                queries.push(|key, filter| unsafe { ribbon_may_match_bmi2(key, filter) });
            }
        }
        let mut state = 0x71b6_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state.rotate_right(11)
        };
        let mut compared = 0;
        for n in (0..40).chain([64, 100, 129, 500, 1000, 1100, 3000]) {
            for bits_per_key in [1.5, 3.0, 6.0, 10.0, 16.0, 25.0] {
                let hashes: Vec<u64> = (0..n).map(|_| next()).collect();
                let len = CompactPolicy::new(bits_per_key)
                    .unwrap()
                    .filter_len(n)
                    .unwrap();
                let filters: Vec<Vec<u8>> = builds
                    .iter()
                    .map(|build| {
                        let mut filter = vec![0u8; len];
                        assert!(build(&hashes, &mut filter), "n {n}, bpk {bits_per_key}");
                        filter
                    })
                    .collect();
                assert!(filters.iter().all(|f| f == &filters[0]));
                let mut filter = filters[0].clone();
                for flips in 0..3 {
                    for _ in 0..flips {
                        let at = (next() % (filter.len() as u64 - 1)) as usize;
                        filter[at] ^= 1 << (next() % 8);
                    }
                    for probe in (0..60).map(|_| next().to_le_bytes()) {
                        let answers: Vec<bool> =
                            queries.iter().map(|q| q(&probe, &filter)).collect();
                        assert!(answers.iter().all(|&a| a == answers[0]), "n {n}");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000);
    }

    type Build = fn(&[u64], &mut [u8]) -> bool;
    type Query = fn(&[u8], &[u8]) -> bool;

    /// The versions of the query this processor can run.
    fn available_versions() -> Vec<Query> {
        let mut versions: Vec<Query> = vec![may_match_portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the processor has popcnt.
                versions.push(|key, filter| unsafe { may_match_popcnt(key, filter) });
            }
            if detect() == Level::Pdep {
                // SAFETY: the processor has every feature `may_match_pdep` needs.
                versions.push(|key, filter| unsafe { may_match_pdep(key, filter) });
            }
        }
        versions
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn pdep_select_finds_every_set_bit_where_the_processor_has_bmi2() {
        if !std::arch::is_x86_feature_detected!("bmi2") {
            return;
        }
        #[target_feature(enable = "bmi2")]
        fn select(word: u64, k: u64) -> u32 {
            <Pdep as query::Select>::select(word, k)
        }
        let mut word = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..2000 {
            word = word.rotate_left(7).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
            for k in 0..u64::from(word.count_ones()) {
                // SAFETY: the processor has BMI2 (checked above).
                let bit = unsafe { select(word, k) };
                let below = word & ((1u64 << bit) - 1);
                assert!(word >> bit & 1 == 1 && u64::from(below.count_ones()) == k);
            }
        }
    }
}
