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

mod common;

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use common::*;
use leveldb_bloom::{BloomPolicy, CompactPolicy};

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
