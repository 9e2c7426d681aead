//! Which compiled version of each vectorised routine this process runs: decided here, once,
//! for all of them.
//!
//! Every routine with a version for wider instructions keeps its portable version, and the
//! tests run each version this processor has against the others and against LevelDB.
//!
//! | routine | [`Level::AVX2`] | [`Level::POPCNT`] | [`Level::PORTABLE`] |
//! |---|---|---|---|
//! | Bloom filter creation, batch queries (`bloom::lanes`) | eight keys in AVX2 lanes | scalar | scalar |
//! | ribbon query (`compact::ribbon`) | popcnt and BMI2 | popcnt | portable |
//! | ribbon creation | popcnt | popcnt | portable |
//! | the C API's single-key Bloom query | BMI2 | scalar | scalar |
//!
//! `AVX2` is an x86-64 processor with AVX2, BMI1, BMI2 and popcnt; `POPCNT` one with
//! popcnt; every other processor, and every other architecture, runs `PORTABLE`. The level
//! is found at the first call that needs it. `LEVELDB_BLOOM_SIMD` pins it for the process:
//!
//! | value | level |
//! |---|---|
//! | unset, empty or `auto` | the best this processor has |
//! | `portable` | `PORTABLE` |
//!
//! Any other value gets one line on standard error and `auto`: a typo must not silently
//! test the wrong code, nor stop a program that only wanted its filters.
//!
//! Code outside this crate that compiles its own copy of a routine for wider instructions
//! (the C API's single-key Bloom query, built for BMI2) asks [`instructions`], so that the
//! same choice and the same switch reach it.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level this processor runs. Only this module makes one other than
/// [`PORTABLE`](Self::PORTABLE), from what the processor reports, so code compiled for the
/// level's instructions may run wherever it is given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Level(u8);

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl Level {
    /// The target's baseline instructions: every processor.
    pub(crate) const PORTABLE: Level = Level(1);
    /// x86-64 with popcnt.
    const POPCNT: Level = Level(2);
    /// x86-64 with AVX2, BMI1, BMI2 and popcnt.
    const AVX2: Level = Level(3);

    /// Whether code compiled for popcnt may run.
    #[inline(always)]
    pub(crate) fn has_popcnt(self) -> bool {
        self >= Level::POPCNT
    }

    /// Whether code compiled for AVX2, BMI1, BMI2 and popcnt may run.
    #[inline(always)]
    pub(crate) fn has_avx2(self) -> bool {
        self >= Level::AVX2
    }
}

/// The instruction set this process's filter code runs: the best this processor has, unless
/// `LEVELDB_BLOOM_SIMD=portable` pinned the portable code. Chosen at the first call that
/// needs it, and the same for the whole process after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Instructions {
    /// The target's baseline instructions: every processor, every architecture.
    Portable,
    /// x86-64 with popcnt.
    Popcnt,
    /// x86-64 with AVX2, BMI1, BMI2 and popcnt.
    Avx2,
}

/// The instruction set this process's filter code runs (see [`Instructions`]).
pub fn instructions() -> Instructions {
    let level = level();
    if level.has_avx2() {
        Instructions::Avx2
    } else if level.has_popcnt() {
        Instructions::Popcnt
    } else {
        Instructions::Portable
    }
}

/// The level this process runs: the best the processor has, unless `LEVELDB_BLOOM_SIMD`
/// pinned it.
#[inline(always)]
pub(crate) fn level() -> Level {
    match CHOSEN.load(Ordering::Relaxed) {
        UNKNOWN => choose(),
        level => Level(level),
    }
}

/// The level this process runs, once [`level`] has chosen it: for callers that keep the
/// first call out of line, so that the choice's call does not give every call a stack frame.
#[inline(always)]
pub(crate) fn chosen() -> Option<Level> {
    match CHOSEN.load(Ordering::Relaxed) {
        UNKNOWN => None,
        level => Some(Level(level)),
    }
}

/// Every level this processor runs, lowest first, whatever `LEVELDB_BLOOM_SIMD` says: the
/// tests run each routine at each.
#[cfg(test)]
pub(crate) fn supported() -> Vec<Level> {
    [Level::PORTABLE, Level::POPCNT, Level::AVX2]
        .into_iter()
        .filter(|&level| level <= detect())
        .collect()
}

const UNKNOWN: u8 = 0;

static CHOSEN: AtomicU8 = AtomicU8::new(UNKNOWN);

#[cold]
#[inline(never)]
fn choose() -> Level {
    let level = match std::env::var_os("LEVELDB_BLOOM_SIMD") {
        None => detect(),
        Some(value) if value.is_empty() || value == "auto" => detect(),
        Some(value) if value == "portable" => Level::PORTABLE,
        Some(value) => {
            // A failed write is no reason to stop a program that only wanted its filters.
            let _ = writeln!(
                std::io::stderr(),
                "leveldb-bloom: LEVELDB_BLOOM_SIMD={value:?} is not auto or portable; using auto"
            );
            detect()
        }
    };
    // Racing first calls read the same environment and store the same level.
    CHOSEN.store(level.0, Ordering::Relaxed);
    level
}

/// The best level the processor reports.
fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("popcnt") {
            return Level::AVX2;
        }
        if has!("popcnt") {
            return Level::POPCNT;
        }
    }
    Level::PORTABLE
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
    }
}
