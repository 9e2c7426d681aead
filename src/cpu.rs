//! Which compiled version of each vectorised routine this process runs: decided here, once,
//! for all of them.
//!
//! Every routine with a version for wider instructions keeps its portable version, and the
//! tests run each version this processor has against the others and against LevelDB.
//!
//! | routine | AVX512 | AVX2 | POPCNT | PORTABLE |
//! |---|---|---|---|---|
//! | Bloom filter creation, batch queries (`bloom::lanes`) | as AVX2 | eight keys in AVX2 lanes | scalar | scalar |
//! | ribbon query (`compact::ribbon`) | a key's columns in 8 lanes | in 4 lanes | popcnt | portable |
//! | ribbon creation | popcnt | popcnt | popcnt | portable |
//! | the C API's single-key Bloom query | BMI2 | BMI2 | scalar | scalar |
//!
//! `AVX512` is an x86-64 processor with AVX2's level and AVX-512's foundation, DQ, BW, VL,
//! VBMI and VPOPCNTDQ instructions (AMD Zen 4 on, Intel Ice Lake on); `AVX2` one with AVX2, BMI1,
//! BMI2 and popcnt; `POPCNT` one with popcnt; every other processor, and every other
//! architecture, runs `PORTABLE`. The level is found at the first call that needs it.
//! `LEVELDB_BLOOM_SIMD` pins it for the process, never above what the processor has:
//!
//! | value | level |
//! |---|---|
//! | unset, empty or `auto` | the best this processor has |
//! | `avx512`, `avx2`, `popcnt` | that level, or the best below it this processor has |
//! | `portable` | `PORTABLE` |
//!
//! Any other value gets one line on standard error and `auto`: a typo must not silently
//! test the wrong code, nor stop a program that only wanted its filters.
//!
//! One type says which: [`Instructions`], the library's and its callers'. The C API and the
//! drop-in compile the library's single-key Bloom query into their own exported function
//! twice, once for BMI2 (so the whole call, argument checks included, is one function with
//! no call inside); they pick between the two by [`instructions`], so that the same choice
//! and the same switch reach them.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction set this process's filter code runs: the best this processor has, unless
/// `LEVELDB_BLOOM_SIMD=portable` pinned the portable code ([`instructions`]).
///
/// Only this module makes a value other than [`PORTABLE`](Self::PORTABLE), from what the
/// processor reports, so code compiled for a value's instructions may run wherever it is
/// given one: the vector code's safety rests on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instructions(u8);

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl Instructions {
    /// The target's baseline instructions: every processor, every architecture.
    pub const PORTABLE: Instructions = Instructions(1);
    /// x86-64 with popcnt.
    const POPCNT: Instructions = Instructions(2);
    /// x86-64 with AVX2, BMI1, BMI2 and popcnt.
    const AVX2: Instructions = Instructions(3);
    /// x86-64 with AVX2's level and AVX-512 F, DQ, BW, VL, VBMI and VPOPCNTDQ.
    const AVX512: Instructions = Instructions(4);

    /// Whether code compiled for popcnt may run.
    #[inline(always)]
    pub fn has_popcnt(self) -> bool {
        self >= Instructions::POPCNT
    }

    /// Whether code compiled for BMI2 may run (the AVX2 level includes it).
    #[inline(always)]
    pub fn has_bmi2(self) -> bool {
        self >= Instructions::AVX2
    }

    /// Whether code compiled for AVX2, BMI1, BMI2 and popcnt may run.
    #[inline(always)]
    pub fn has_avx2(self) -> bool {
        self >= Instructions::AVX2
    }

    /// Whether code compiled for AVX2's level and AVX-512 F, DQ, BW, VL, VBMI and VPOPCNTDQ
    /// may run.
    #[inline(always)]
    pub fn has_avx512(self) -> bool {
        self >= Instructions::AVX512
    }
}

/// The instruction set this process's filter code runs (see [`Instructions`]): the best
/// the processor has, unless `LEVELDB_BLOOM_SIMD` pinned it. Chosen at the first call that
/// needs it, and the same for the whole process after.
#[inline(always)]
pub fn instructions() -> Instructions {
    match CHOSEN.load(Ordering::Relaxed) {
        UNKNOWN => choose(),
        level => Instructions(level),
    }
}

/// The instructions this process runs, once [`instructions`] has chosen them: for callers
/// that keep the first call out of line, so that the choice's call does not give every call
/// a stack frame.
#[inline(always)]
pub(crate) fn chosen() -> Option<Instructions> {
    match CHOSEN.load(Ordering::Relaxed) {
        UNKNOWN => None,
        level => Some(Instructions(level)),
    }
}

/// Every level this processor runs, lowest first, whatever `LEVELDB_BLOOM_SIMD` says: the
/// tests run each routine at each.
#[cfg(test)]
pub(crate) fn supported() -> Vec<Instructions> {
    [
        Instructions::PORTABLE,
        Instructions::POPCNT,
        Instructions::AVX2,
        Instructions::AVX512,
    ]
    .into_iter()
    .filter(|&level| level <= detect())
    .collect()
}

const UNKNOWN: u8 = 0;

static CHOSEN: AtomicU8 = AtomicU8::new(UNKNOWN);

#[cold]
#[inline(never)]
fn choose() -> Instructions {
    let level = match std::env::var_os("LEVELDB_BLOOM_SIMD") {
        None => detect(),
        Some(value) if value.is_empty() || value == "auto" => detect(),
        Some(value) if value == "portable" => Instructions::PORTABLE,
        Some(value) if value == "popcnt" => Instructions::POPCNT.min(detect()),
        Some(value) if value == "avx2" => Instructions::AVX2.min(detect()),
        Some(value) if value == "avx512" => Instructions::AVX512.min(detect()),
        Some(value) => {
            // A failed write is no reason to stop a program that only wanted its filters.
            let _ = writeln!(
                std::io::stderr(),
                "leveldb-bloom: LEVELDB_BLOOM_SIMD={value:?} is not auto, avx512, avx2, popcnt or \
                 portable; using auto"
            );
            detect()
        }
    };
    // Racing first calls read the same environment and store the same level.
    CHOSEN.store(level.0, Ordering::Relaxed);
    level
}

/// The best level the processor reports.
fn detect() -> Instructions {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("popcnt") {
            let avx512 = has!("avx512f")
                && has!("avx512dq")
                && has!("avx512bw")
                && has!("avx512vl")
                && has!("avx512vbmi")
                && has!("avx512vpopcntdq");
            return if avx512 {
                Instructions::AVX512
            } else {
                Instructions::AVX2
            };
        }
        if has!("popcnt") {
            return Instructions::POPCNT;
        }
    }
    Instructions::PORTABLE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests of each routine are ignored where the processor that built them lacks a
    /// level (build.rs), so this one checks that the build saw the processor it runs on.
    #[test]
    fn the_build_saw_this_processor() {
        let best = *supported().last().expect("PORTABLE at least");
        assert_eq!(
            best.has_avx2(),
            cfg!(leveldb_bloom_test_avx2),
            "built on another processor: the AVX2 tests' ignore is wrong"
        );
        assert_eq!(best.has_popcnt(), cfg!(leveldb_bloom_test_popcnt));
        assert_eq!(best.has_avx512(), cfg!(leveldb_bloom_test_avx512));
    }

    /// Each level says no more than the processor reports: the vector code's safety.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_level_is_the_processor_s() {
        use std::arch::is_x86_feature_detected as has;
        for level in supported() {
            if level.has_popcnt() {
                assert!(has!("popcnt"), "{level:?}");
            }
            if level.has_bmi2() {
                assert!(has!("bmi2"), "{level:?}");
            }
            if level.has_avx2() {
                assert!(has!("avx2") && has!("bmi1") && has!("bmi2"), "{level:?}");
            }
            if level.has_avx512() {
                assert!(
                    has!("avx512f")
                        && has!("avx512dq")
                        && has!("avx512bw")
                        && has!("avx512vl")
                        && has!("avx512vbmi")
                        && has!("avx512vpopcntdq"),
                    "{level:?}"
                );
            }
        }
        let chosen = instructions();
        assert!(supported().contains(&chosen), "{chosen:?}");
    }
}
