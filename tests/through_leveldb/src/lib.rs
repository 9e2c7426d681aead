//! Test-only crate: LevelDB's C API (`leveldb/c.h`), bound by bindgen at build time, for the
//! integration tests in `tests/` that run leveldb-bloom inside a real LevelDB database.
//! Not published; users of leveldb-bloom never build it.

/// The bindings bindgen generated from `leveldb/c.h` (every `leveldb_*` item).
#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    clippy::all,
    clippy::pedantic
)]
pub mod sys {
    include!(concat!(env!("OUT_DIR"), "/leveldb_c.rs"));
}
