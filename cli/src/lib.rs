//! `leveldb-bloom`, the command: inspect, verify and upgrade the filters of a LevelDB
//! database. The tables and logs are read here, in Rust ([`table`], [`log_reader`],
//! [`manifest`], [`wal`], [`orphans`]); only `upgrade` calls LevelDB (`leveldb`), so that
//! LevelDB itself writes every new table, and keeps the way back ([`way_back`]) until
//! LevelDB reads the same records after it as before. Built without the `upgrade` feature
//! (as the Python package's command is), nothing here links LevelDB.

mod analysis;
pub mod failure;
pub mod files;
pub mod format_arg;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod inspect;
#[cfg(feature = "upgrade")]
pub mod leveldb;
pub mod lock;
pub mod log_reader;
pub mod manifest;
pub mod orphans;
pub mod report;
pub mod run;
pub mod table;
mod target;
#[cfg(feature = "upgrade")]
pub mod upgrade;
pub mod verify;
pub mod wal;
pub mod way_back;
