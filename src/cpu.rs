//! Which compiled version of the code that has several this process runs, chosen once: the
//! compact query (`src/compact/cpu.rs`), and Bloom filter creation and batch queries
//! (`src/bloom/cpu.rs`).
//!
//! Every routine that has a version for wider instructions keeps its portable version, and
//! both are proven against LevelDB. `LEVELDB_BLOOM_SIMD` pins the choice for a process (read
//! once, at the first call that needs it):
//!
//! | value | versions used |
//! |---|---|
//! | unset, empty or `auto` | the best this processor has |
//! | `portable` | the portable code only (the x86-64 baseline) |
//!
//! Any other value gets one line on standard error and `auto`: a typo must not silently
//! test the wrong code, nor stop a program that only wanted its filters.

use std::sync::atomic::{AtomicU8, Ordering};

const UNKNOWN: u8 = 0;
const PORTABLE: u8 = 1;
const AUTO: u8 = 2;

static CHOICE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether `LEVELDB_BLOOM_SIMD=portable` pins this process to the portable code.
#[inline]
pub(crate) fn portable_only() -> bool {
    match CHOICE.load(Ordering::Relaxed) {
        UNKNOWN => read_choice() == PORTABLE,
        choice => choice == PORTABLE,
    }
}

#[cold]
#[inline(never)]
fn read_choice() -> u8 {
    let choice = match std::env::var("LEVELDB_BLOOM_SIMD") {
        Err(std::env::VarError::NotPresent) => AUTO,
        Ok(value) if value.is_empty() || value == "auto" => AUTO,
        Ok(value) if value == "portable" => PORTABLE,
        Ok(value) => {
            eprintln!(
                "leveldb-bloom: LEVELDB_BLOOM_SIMD={value:?} is not auto or portable; using auto"
            );
            AUTO
        }
        Err(std::env::VarError::NotUnicode(value)) => {
            eprintln!(
                "leveldb-bloom: LEVELDB_BLOOM_SIMD={value:?} is not auto or portable; using auto"
            );
            AUTO
        }
    };
    // Racing first calls read the same environment and store the same choice.
    CHOICE.store(choice, Ordering::Relaxed);
    choice
}
