//! leveldb-bloom's policies in rusty-leveldb (the crates.io LevelDB, through the library's
//! `rusty-leveldb` feature), judged by LevelDB 1.23:
//!
//! - Bloom: rusty-leveldb writes a database with `BloomPolicy`; every filter it stores is
//!   the one LevelDB's own Bloom policy builds for the same keys, the table files are
//!   byte-identical to those rusty-leveldb writes with its own Bloom policy, and LevelDB
//!   reads every record back, its filters answering.
//! - Compact: rusty-leveldb writes with `CompactPolicy` and reads every record back; LevelDB
//!   with leveldb-bloom's compact policy (what the drop-in gives it) reads every record, its
//!   filters ruling absent keys out, and stock LevelDB reads every record unfiltered.
#![deny(clippy::undocumented_unsafe_blocks)]

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_void};
use std::path::Path;
use std::ptr;
use std::rc::Rc;

use leveldb_bloom::{BloomPolicy, CompactPolicy};
use leveldb_bloom_capi::{
    leveldb_bloom_cb_create_filter, leveldb_bloom_cb_destructor, leveldb_bloom_cb_key_may_match,
    leveldb_bloom_cb_name, leveldb_bloom_policy_counted, leveldb_bloom_policy_create_compact,
    leveldb_bloom_policy_destroy, leveldb_bloom_policy_stats, leveldb_bloom_stats,
};
use leveldb_oracle::sys;

const RECORDS: u64 = 20_000;

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value {i} {}", "x".repeat((i % 40) as usize)).into_bytes()
}

/// Keys absent from the database, among the present ones.
fn absent(i: u64) -> Vec<u8> {
    format!("user{i:010}~").into_bytes()
}

/// Every filter a [`Recording`] policy built, with the keys it built it for.
type Built = Rc<RefCell<Vec<(Vec<Vec<u8>>, Vec<u8>)>>>;

/// A policy that records every filter it builds, and the keys it built it for.
struct Recording<P> {
    inner: P,
    filters: Built,
}

impl<P: rusty_leveldb::FilterPolicy> rusty_leveldb::FilterPolicy for Recording<P> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn create_filter(&self, keys: &[u8], key_offsets: &[usize]) -> Vec<u8> {
        let filter = self.inner.create_filter(keys, key_offsets);
        let ends = key_offsets.iter().skip(1).copied().chain([keys.len()]);
        let split = key_offsets
            .iter()
            .zip(ends)
            .map(|(&s, e)| keys[s..e].to_vec());
        self.filters
            .borrow_mut()
            .push((split.collect(), filter.clone()));
        filter
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        self.inner.key_may_match(key, filter)
    }
}

/// Writes the test's records with rusty-leveldb and `policy` into `dir`: small memtables,
/// so that many tables are built, every 7th key written again, then the whole range
/// compacted. (No deletions: rusty-leveldb 4.0.2's lookups miss records of a database with
/// deletion markers, with its own Bloom filters or none: docs/bindings.md.)
fn write_with(dir: &Path, policy: Rc<Box<dyn rusty_leveldb::FilterPolicy>>) {
    let options = rusty_leveldb::Options {
        write_buffer_size: 64 << 10,
        filter_policy: policy,
        ..rusty_leveldb::Options::default()
    };
    let mut db = rusty_leveldb::DB::open(dir, options).unwrap();
    for i in 0..RECORDS {
        db.put(&key(i), &value(i)).unwrap();
    }
    for i in (0..RECORDS).step_by(7) {
        db.put(&key(i), b"written again").unwrap();
    }
    db.compact_range(&key(0), &key(RECORDS)).unwrap();
    db.close().unwrap();
}

fn expected(i: u64) -> Option<Vec<u8>> {
    Some(if i.is_multiple_of(7) {
        b"written again".to_vec()
    } else {
        value(i)
    })
}

fn table_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut tables: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    tables.sort();
    tables
}

/// What LevelDB 1.23 read of a database: records as expected, absent keys found, and the
/// queries and "no match" answers of leveldb-bloom's policy when it was the one used.
#[derive(Debug, PartialEq, Eq)]
struct Read {
    records: u64,
    absent_found: u64,
    queries_and_ruled_out: Option<(u64, u64)>,
}

/// LevelDB 1.23 opens the database in `dir` with stock LevelDB's Bloom policy, or with
/// leveldb-bloom's policy (counted) in the compact format when `compact`, and reads every
/// record and the absent keys.
fn leveldb_reads(dir: &Path, compact: Option<CompactPolicy>) -> Read {
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

#[test]
fn a_rusty_leveldb_database_with_bloom_filters_is_leveldbs_own() {
    let tmp = tempfile::tempdir().unwrap();
    let (ours, theirs) = (tmp.path().join("ours"), tmp.path().join("theirs"));
    let filters = Rc::new(RefCell::new(Vec::new()));
    let recording = Recording {
        inner: BloomPolicy::new(10).unwrap(),
        filters: filters.clone(),
    };
    write_with(&ours, Rc::new(Box::new(recording)));
    write_with(
        &theirs,
        Rc::new(Box::new(rusty_leveldb::BloomPolicy::new(10))),
    );

    // Every filter stored is LevelDB's own for its keys.
    let filters = filters.borrow();
    assert!(filters.len() > 20, "{} filters built", filters.len());
    for (keys, filter) in filters.iter() {
        assert_eq!(
            *filter,
            leveldb_oracle::bloom_filter(keys, 10),
            "{} keys",
            keys.len()
        );
    }
    // And the tables are what rusty-leveldb's own Bloom policy writes.
    let tables = table_files(&ours);
    assert!(!tables.is_empty());
    assert_eq!(tables, table_files(&theirs));

    // LevelDB 1.23 reads every record with its own Bloom policy.
    let read = leveldb_reads(&ours, None);
    assert_eq!((read.records, read.absent_found), (RECORDS, 0));
}

#[test]
fn a_rusty_leveldb_database_with_compact_filters_reads_back_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("compact");
    write_with(&dir, Rc::new(Box::new(CompactPolicy::new(10.0).unwrap())));

    // rusty-leveldb reads every record back through the compact filters.
    {
        let options = rusty_leveldb::Options {
            filter_policy: Rc::new(Box::new(CompactPolicy::new(10.0).unwrap())),
            ..rusty_leveldb::Options::default()
        };
        let mut db = rusty_leveldb::DB::open(&dir, options).unwrap();
        for i in 0..RECORDS {
            assert_eq!(db.get(&key(i)).map(|v| v.to_vec()), expected(i), "key {i}");
        }
        db.close().unwrap();
    }
    // Stock LevelDB reads every record, the compact filters answering "may match".
    let read = leveldb_reads(&dir, None);
    assert_eq!((read.records, read.absent_found), (RECORDS, 0));
    // LevelDB with leveldb-bloom's compact policy (what the drop-in gives it) reads every
    // record, and its filters rule out most absent keys.
    let read = leveldb_reads(&dir, Some(CompactPolicy::new(10.0).unwrap()));
    assert_eq!((read.records, read.absent_found), (RECORDS, 0));
    let (queries, ruled_out) = read.queries_and_ruled_out.unwrap();
    assert!(queries >= 2 * RECORDS * 6 / 7, "{queries} queries");
    assert!(
        ruled_out > RECORDS * 9 / 10,
        "{ruled_out} of {RECORDS} absent keys ruled out"
    );
}
