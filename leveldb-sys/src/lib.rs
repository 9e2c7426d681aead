//! LevelDB's C API (`leveldb/c.h`), every `leveldb_*` item, as bindgen generates it from the
//! installed header at build time; links `libleveldb`. The one binding of LevelDB in this
//! project: the `leveldb-bloom` command and the tests that run inside real databases use it.

#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs,
    clippy::all,
    clippy::pedantic
)]

include!(concat!(env!("OUT_DIR"), "/leveldb_c.rs"));
