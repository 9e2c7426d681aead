//! LevelDB's built-in Bloom filter policy, `leveldb.BuiltinBloomFilter2`, bit-identical to
//! LevelDB 1.23, with a C ABI that plugs into `leveldb_filterpolicy_create`.
//!
//! The Rust API needs no C: [`BloomPolicy`] builds and queries filters, and
//! [`FilterBlockBuilder`] / [`FilterBlockReader`] handle the filter block of a table.
//!
//! ```
//! use leveldb_bloom::{BloomPolicy, FilterFormat};
//!
//! let policy = BloomPolicy::new(10)?;
//! let mut filter = Vec::new();
//! policy.create_filter(["hello", "world"], &mut filter)?;
//! assert!(policy.key_may_match(b"hello", &filter));
//! # Ok::<(), leveldb_bloom::Error>(())
//! ```
//!
//! [`CompactPolicy`] is an opt-in format with a fifth to a third of the false positives in
//! the same memory (`docs/compact-format.md`); it keeps LevelDB's policy name and reads LevelDB's
//! Bloom filters bit-identically, and stock LevelDB reads its filters as "may match".
//!
//! Both formats, and [`FilterPolicy`] which holds either, implement [`FilterFormat`]: the
//! sizes, the builds and the queries are written once there.
//!
//! The C API (`include/leveldb_bloom.h`) is generated from the [`ffi`] module.

// Unsafe code is allowed only where it is needed: the C boundary, the compact query's
// CPU-feature dispatch and the statistics' thread-pointer read.
#![deny(unsafe_code)]

pub mod bloom;
pub mod compact;
mod cpu;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
pub mod filter;
pub mod filter_block;
pub mod hash;
pub mod policy;
mod remainder;
pub mod stats;
pub mod xxh3;

pub use bloom::{BloomPolicy, key_may_match};
pub use compact::CompactPolicy;
pub use error::Error;
pub use filter::FilterFormat;
pub use filter_block::{FilterBlockBuilder, FilterBlockReader};
pub use policy::{FilterPolicy, Format};
pub use stats::{Stats, StatsSnapshot};
