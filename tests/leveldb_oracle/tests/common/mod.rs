//! What the tests of other engines' databases share: the records every engine writes (the
//! same keys and values, so that one reader judges them all), and LevelDB 1.23 reading them.
#![allow(dead_code)]

use std::ffi::{CString, c_char, c_void};
use std::path::Path;
use std::ptr;

use leveldb_bloom::CompactPolicy;
use leveldb_bloom_capi::{
    leveldb_bloom_cb_create_filter, leveldb_bloom_cb_destructor, leveldb_bloom_cb_key_may_match,
    leveldb_bloom_cb_name, leveldb_bloom_policy_counted, leveldb_bloom_policy_create_compact,
    leveldb_bloom_policy_destroy, leveldb_bloom_policy_stats, leveldb_bloom_stats,
};
use leveldb_oracle::sys;

/// How many records each engine writes: `key(i)` = `value(i)` for every `i` below, every
/// 7th written again as `written again`.
pub const RECORDS: u64 = 20_000;

pub fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

pub fn value(i: u64) -> Vec<u8> {
    format!("value {i} {}", "x".repeat((i % 40) as usize)).into_bytes()
}

/// Keys absent from the database, among the present ones.
pub fn absent(i: u64) -> Vec<u8> {
    format!("user{i:010}~").into_bytes()
}

/// What `key(i)` reads.
pub fn expected(i: u64) -> Option<Vec<u8>> {
    Some(if i.is_multiple_of(7) {
        b"written again".to_vec()
    } else {
        value(i)
    })
}

/// What LevelDB 1.23 read of a database: records as expected, absent keys found, and the
/// queries and "no match" answers of leveldb-bloom's policy when it was the one used.
#[derive(Debug, PartialEq, Eq)]
pub struct Read {
    pub records: u64,
    pub absent_found: u64,
    pub queries_and_ruled_out: Option<(u64, u64)>,
}

/// LevelDB 1.23 opens the database in `dir` with stock LevelDB's Bloom policy, or with
/// leveldb-bloom's policy (counted) in the compact format when `compact`, and reads every
/// record and the absent keys.
pub fn leveldb_reads(dir: &Path, compact: Option<CompactPolicy>) -> Read {
    let name = CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: every LevelDB and leveldb-bloom object is created, used while live, and
    // destroyed once (the counted policy by its filter policy's destructor callback, after
    // its counters are read); the keys outlive each call; a returned value is LevelDB's
    // malloc'd copy, freed here.
    unsafe {
        let counted = compact.map(|c| {
            let plain = leveldb_bloom_policy_create_compact(c.bits_per_key());
            let counted = leveldb_bloom_policy_counted(plain);
            leveldb_bloom_policy_destroy(plain);
            assert!(!counted.is_null());
            counted
        });
        let policy = match counted {
            None => sys::leveldb_filterpolicy_create_bloom(10),
            Some(counted) => sys::leveldb_filterpolicy_create(
                counted.cast::<c_void>(),
                Some(leveldb_bloom_cb_destructor),
                Some(leveldb_bloom_cb_create_filter),
                Some(leveldb_bloom_cb_key_may_match),
                Some(leveldb_bloom_cb_name),
            ),
        };
        let options = sys::leveldb_options_create();
        sys::leveldb_options_set_filter_policy(options, policy);
        sys::leveldb_options_set_paranoid_checks(options, 1);
        let mut err: *mut c_char = ptr::null_mut();
        let db = sys::leveldb_open(options, name.as_ptr(), &mut err);
        assert!(err.is_null(), "LevelDB opens rusty-leveldb's database");
        let read = sys::leveldb_readoptions_create();
        let get = |k: &[u8]| {
            let (mut len, mut err) = (0, ptr::null_mut());
            let v = sys::leveldb_get(db, read, k.as_ptr().cast(), k.len(), &mut len, &mut err);
            assert!(err.is_null());
            (!v.is_null()).then(|| {
                let copy = std::slice::from_raw_parts(v.cast::<u8>(), len).to_vec();
                sys::leveldb_free(v.cast());
                copy
            })
        };
        let records = (0..RECORDS)
            .filter(|&i| get(&key(i)) == expected(i))
            .count() as u64;
        let absent_found = (0..RECORDS).filter(|&i| get(&absent(i)).is_some()).count() as u64;
        let queries_and_ruled_out = counted.map(|counted| {
            let mut stats = leveldb_bloom_stats::default();
            assert_eq!(leveldb_bloom_policy_stats(counted, &mut stats), 0);
            (stats.queries, stats.no_match)
        });
        sys::leveldb_readoptions_destroy(read);
        sys::leveldb_close(db);
        sys::leveldb_options_destroy(options);
        sys::leveldb_filterpolicy_destroy(policy);
        Read {
            records,
            absent_found,
            queries_and_ruled_out,
        }
    }
}
