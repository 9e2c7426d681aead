//! The committed C header, `include/leveldb_bloom.h` at the top of the repository (where C
//! users find it), must be exactly what build.rs generates from this crate's code.
//! Run with `LEVELDB_BLOOM_UPDATE_HEADER=1` to rewrite `include/leveldb_bloom.h`.

use std::path::Path;

#[test]
fn committed_header_matches_generated() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/leveldb_bloom.h"));
    let committed_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/leveldb_bloom.h");
    if std::env::var_os("LEVELDB_BLOOM_UPDATE_HEADER").is_some() {
        std::fs::write(&committed_path, generated).expect("write include/leveldb_bloom.h");
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/leveldb_bloom.h is out of date with capi/src: run \
         `LEVELDB_BLOOM_UPDATE_HEADER=1 cargo test -p leveldb-bloom-capi --test header` and \
         commit the result"
    );
}
