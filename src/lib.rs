//! LevelDB's built-in Bloom filter policy, `leveldb.BuiltinBloomFilter2`, bit-identical to
//! LevelDB 1.23, and an opt-in compact format. The library has no C ABI: the C API
//! (`leveldb_filterpolicy_create`'s callbacks among it) is the `capi` crate, built on this one.
//!
//! The Rust API needs no C. A [`FilterPolicy`] builds and answers filters, as LevelDB's
//! `leveldb::FilterPolicy` does:
//!
//! - [`BloomPolicy`] builds LevelDB's own Bloom filters, byte for byte, and answers every
//!   filter exactly as LevelDB answers it, malformed ones included;
//! - [`CompactPolicy`] is an opt-in format with far fewer false positives in the same
//!   memory (measured: `docs/benchmarks.md`, "The compact format's gain"; the format:
//!   `docs/compact-format.md`): it keeps LevelDB's policy name, reads
//!   LevelDB's Bloom filters bit-identically, and stock LevelDB reads its filters as "may
//!   match";
//! - [`Counted`] wraps either and counts what it does ([`StatsSnapshot`]).
//!
//! [`FilterBlockBuilder`] and [`FilterBlockReader`] handle the filter block of a table.
//!
//! With the `rusty-leveldb` feature, each policy is a filter policy of rusty-leveldb (the
//! crates.io LevelDB): `options.filter_policy = Rc::new(Box::new(CompactPolicy::new(10.0)?))`.
//!
//! ```
//! use leveldb_bloom::{BloomPolicy, FilterPolicy};
//!
//! let policy = BloomPolicy::new(10)?;
//! let mut filter = Vec::new();
//! policy.create_filter(["hello", "world"], &mut filter)?;
//! assert!(policy.key_may_match(b"hello", &filter));
//! # Ok::<(), leveldb_bloom::Error>(())
//! ```
//!
//! The C library built on this crate (`capi/`, `include/leveldb_bloom.h`) is a crate of its
//! own: a Rust program that depends on this one compiles no C ABI.

// Unsafe code is allowed only where it is needed: the code compiled for wider instructions
// (`bloom::lanes`, `compact::ribbon`).
#![deny(unsafe_code)]

mod any_policy;
pub mod bloom;
pub mod compact;
mod cpu;
mod error;
mod filter_block;
mod hash;
mod policy;
mod remainder;
#[cfg(feature = "rusty-leveldb")]
mod rusty_leveldb_policy;
mod stats;

pub use any_policy::{AnyPolicy, Format};
pub use bloom::BloomPolicy;
pub use compact::CompactPolicy;
pub use cpu::{Instructions, instructions};
pub use error::Error;
pub use filter_block::{FILTER_BASE_LG, FilterBlockBuilder, FilterBlockReader};
pub use policy::{FilterPolicy, MATCH_ALL_FILTER, NAME};
pub use stats::{Counted, Stats, StatsSnapshot, global_stats, reset_global_stats};

/// The Rust example of `docs/bindings.md`, compiled and run by `cargo test` (doc tests) so
/// that the document cannot drift from the crate.
#[cfg(doctest)]
#[doc = include_str!("../docs/bindings.md")]
struct BindingsDocExamples;
