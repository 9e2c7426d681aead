//! `libleveldb_bloom.so` and `libleveldb_bloom.a`: every function of the C API
//! (`leveldb-bloom-capi`, documented by `include/leveldb_bloom.h`), exported.

pub use leveldb_bloom_capi::*;
