//! leveldb-bloom's filters in goleveldb (bindings/go/goleveldbfilter), judged by LevelDB
//! 1.23. A Go program (`goleveldb/main.go`, built with Debian's goleveldb package in GOPATH
//! mode against this build's C library) writes the test's records with each format:
//!
//! - Bloom: its filters equal goleveldb's own `filter.NewBloomFilter(10)`'s for the same
//!   keys (checked in Go over random key sets); goleveldb reads every record back; LevelDB
//!   reads every record with its own Bloom policy.
//! - Compact: goleveldb reads every record back; stock LevelDB reads every record
//!   (unfiltered), and LevelDB with leveldb-bloom's compact policy (what the drop-in gives
//!   it) reads every record, its filters ruling absent keys out.
//!
//! Needs Go and Debian's golang-github-syndtr-goleveldb-dev, and the C library built
//! (`cargo build --release -p leveldb-bloom-clib`, which the workspace's tests build).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use leveldb_bloom::CompactPolicy;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Go program, built in a GOPATH holding the binding (`leveldbbloom`, with
/// `leveldbbloom/goleveldbfilter`) and Debian's Go sources.
fn program() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let gopath = tmp.join("goleveldb-gopath");
    let link = gopath.join("src/leveldbbloom");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(root().join("bindings/go"), &link).unwrap();
    let binary = tmp.join("goleveldb-with-leveldb-bloom");
    let go = |args: &[&str]| {
        let out = Command::new("go")
            .args(args)
            .current_dir(root().join("tests/leveldb_oracle/tests/goleveldb"))
            .env("GO111MODULE", "off")
            .env("GOPATH", format!("{}:/usr/share/gocode", gopath.display()))
            .env("GOCACHE", tmp.join("go-cache"))
            .env("GOFLAGS", "")
            .env("PKG_CONFIG_PATH", root().join("bindings/go/pkgconfig"))
            .output()
            .expect("run go (Debian: golang-go)");
        assert!(
            out.status.success(),
            "go {args:?} (Debian: golang-go, golang-github-syndtr-goleveldb-dev; the C \
             library: cargo build --release -p leveldb-bloom-clib): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    go(&["vet", "leveldbbloom/goleveldbfilter", "."]);
    go(&["build", "-o", binary.to_str().unwrap(), "."]);
    binary
}

/// Runs the program on a new database of `format`; its output's numbers by name.
fn write_with_goleveldb(format: &str, dir: &Path) -> Vec<(String, u64)> {
    let out = Command::new(program())
        .args([format, dir.to_str().unwrap()])
        .env("LD_LIBRARY_PATH", root().join("target/release"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (name, n) = l.split_once(' ').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn goleveldb_databases_with_leveldb_bloom_filters_read_back_in_leveldb() {
    let tmp = tempfile::tempdir().unwrap();

    let bloom = tmp.path().join("bloom");
    let said = write_with_goleveldb("bloom", &bloom);
    assert_eq!(
        said,
        [("identical".into(), 300), ("read".into(), RECORDS)],
        "goleveldb's own filters, and every record read back by goleveldb"
    );
    let read = leveldb_reads(&bloom, None);
    assert_eq!((read.records, read.absent_found), (RECORDS, 0));

    let compact = tmp.path().join("compact");
    let said = write_with_goleveldb("compact", &compact);
    assert_eq!(said, [("read".into(), RECORDS)]);
    let read = leveldb_reads(&compact, None);
    assert_eq!((read.records, read.absent_found), (RECORDS, 0));
    let read = leveldb_reads(&compact, Some(CompactPolicy::new(10.0).unwrap()));
    assert_eq!((read.records, read.absent_found), (RECORDS, 0));
    let (queries, ruled_out) = read.queries_and_ruled_out.unwrap();
    assert!(queries >= RECORDS, "{queries} queries");
    assert!(
        ruled_out > RECORDS * 9 / 10,
        "{ruled_out} of {RECORDS} absent keys ruled out"
    );
}
