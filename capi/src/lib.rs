//! The C API of leveldb-bloom, built on the Rust library's public interface: every exported
//! function lives in this crate's files, and the header `include/leveldb_bloom.h` is
//! generated from them by cbindgen. The C library (`clib/`, `libleveldb_bloom.{so,a}`)
//! exports them; the drop-in and the command link them from here. Its documentation is the
//! header.
//!
//! Rules shared by all entry points: pointers are checked (a NULL where data is required is
//! an error code, or "may match" for a query); `(NULL, 0)` is accepted as an empty byte
//! string; no panic crosses the boundary.

// One file per concern. The header lists items in the order cbindgen meets these modules.
mod status;

mod handle;

mod policy;

mod filter;

mod query;

mod stats;

mod about;

mod callbacks;

mod filter_block;

mod boundary;

pub use about::{leveldb_bloom_status_message, leveldb_bloom_version};
pub use boundary::leveldb_bloom_slice;
#[cfg(feature = "panic-injection")]
pub use boundary::panic_injection;
pub use callbacks::*;
pub use filter::*;
pub use filter_block::*;
pub use handle::Query;
pub use policy::*;
pub use query::leveldb_bloom_key_may_match;
pub use stats::*;
pub use status::leveldb_bloom_status;
