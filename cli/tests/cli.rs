//! The command against databases real LevelDB 1.23 wrote: inspect's counts against
//! LevelDB's own iteration of each table, verify on intact and damaged tables, upgrade
//! there and back with every key read by stock LevelDB.

mod common;

use std::path::Path;

use common::*;
use leveldb_bloom::{AnyPolicy, CompactPolicy};
use leveldb_bloom_cli::table::{self, RawBlock, Table};

#[test]
fn inspect_counts_what_leveldb_iterates_and_verify_passes() {
    let cases: [(&str, Option<AnyPolicy>, bool); 5] = [
        ("bloom-snappy", Some(BLOOM), true),
        ("bloom-plain", Some(BLOOM), false),
        (
            "compact-snappy",
            Some(AnyPolicy::Compact(CompactPolicy::new(10.0).unwrap())),
            true,
        ),
        (
            "compact-plain",
            Some(AnyPolicy::Compact(CompactPolicy::new(8.5).unwrap())),
            false,
        ),
        ("no-filter", None, true),
    ];
    for (name, filters, snappy) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(name);
        write_db(&dir, filters, snappy, 20_000);
        let json = inspect_json(&dir);
        let tables = json["tables"].as_array().unwrap();
        assert!(tables.len() >= 2, "{name}: {json}");
        let mut total = 0;
        for (t, path) in tables.iter().zip(live_tables(&dir)) {
            assert_eq!(t["file"], path.file_name().unwrap().to_str().unwrap());
            let leveldb = leveldb_table_entries(&path);
            assert_eq!(t["entries"].as_i64(), Some(leveldb), "{name}: {t}");
            total += leveldb;
            assert!(t["data_blocks"].as_u64().unwrap() > 0);
            assert_eq!(
                t["compressed_blocks"].as_u64().unwrap() > 0,
                snappy,
                "{name}: {t}"
            );
            match filters {
                None => {
                    assert!(t["filter_policy"].is_null(), "{name}: {t}");
                    assert_eq!(t["filters"], 0);
                }
                Some(f) => {
                    assert_eq!(t["filter_policy"], "leveldb.BuiltinBloomFilter2");
                    let filters = t["filters"].as_u64().unwrap();
                    let (kind, not) = match f {
                        AnyPolicy::Bloom(_) => ("bloom_filters", "compact_filters"),
                        AnyPolicy::Compact(_) => ("compact_filters", "bloom_filters"),
                    };
                    // Empty filters (LevelDB starts one every 2 KiB of block offsets) count
                    // as other.
                    assert!(t[kind].as_u64().unwrap() > 0, "{name}: {t}");
                    assert_eq!(t[not], 0, "{name}: {t}");
                    assert_eq!(
                        t["bloom_filters"].as_u64().unwrap()
                            + t["compact_filters"].as_u64().unwrap()
                            + t["other_filters"].as_u64().unwrap(),
                        filters
                    );
                    let bpk = t["bits_per_key"].as_f64().unwrap();
                    assert!(bpk > 7.0 && bpk < 12.0, "{name}: {t}");
                    let measured = t["measured_fp"].as_f64().unwrap();
                    assert!(measured < 0.2, "{name}: {t}");
                }
            }
        }
        assert_eq!(json["total"]["entries"].as_i64(), Some(total));
        assert!(
            json["total"]["deletions"].as_u64().unwrap() > 0,
            "{name}: deletion markers"
        );
        let out = run(&["verify", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        // The human-readable table names every live table.
        let out = run(&["inspect", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        for path in live_tables(&dir) {
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            assert!(String::from_utf8_lossy(&out.stdout).contains(&file));
        }
    }
}

#[test]
fn a_table_file_written_by_table_builder_holds_user_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("alone.ldb");
    let mut keys: Vec<Vec<u8>> = (0..5000).map(key).collect();
    keys.sort();
    assert!(leveldb_oracle::write_table(&path, &keys, 10));
    let json = inspect_json(&path);
    let t = &json["tables"][0];
    assert_eq!(t["entries"].as_i64(), Some(leveldb_table_entries(&path)));
    assert_eq!(t["entries"], 5000);
    assert_eq!(t["deletions"], 0);
    let out = run(&["verify", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Read as internal keys, the filters miss keys whose last 8 bytes are cut off.
    let out = run(&["verify", "--keys", "internal", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[test]
fn table_files_outside_the_current_version_are_listed_apart() {
    let (_tmp, dir, _) = bloom_db(5000);
    let live = live_tables(&dir);
    let stray = dir.join("999999.ldb");
    std::fs::copy(&live[0], &stray).unwrap();
    let json = inspect_json(&dir);
    assert_eq!(json["tables"].as_array().unwrap().len(), live.len());
    assert_eq!(json["not_live"][0], stray.to_str().unwrap());
}

/// A copy of the database in `dir` with `damage` applied to its first live table; verify
/// must name that table and exit 1.
fn assert_damage_found(dir: &Path, label: &str, damage: impl FnOnce(&mut Vec<u8>)) {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("copy");
    copy_db(dir, &copy);
    let victim = live_tables(&copy).remove(0);
    let mut bytes = std::fs::read(&victim).unwrap();
    damage(&mut bytes);
    std::fs::write(&victim, &bytes).unwrap();
    let out = run(&["verify", copy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{label}: {}", text(&out));
    let name = victim.file_name().unwrap().to_str().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(name),
        "{label}: {}",
        text(&out)
    );
}

#[test]
fn verify_finds_flipped_bytes_truncation_and_filters_that_lost_bits() {
    let (_tmp, dir, _) = bloom_db(20_000);
    assert_damage_found(&dir, "flipped byte in a data block", |b| b[100] ^= 0x40);
    assert_damage_found(&dir, "flipped byte in the footer's magic", |b| {
        let n = b.len();
        b[n - 3] ^= 1
    });
    assert_damage_found(&dir, "truncated", |b| b.truncate(b.len() / 2));
    assert_damage_found(&dir, "truncated to nothing", Vec::clear);
    // Clear every filter's bits (not its probe count), then recompute the block's
    // checksum: only the filter check can see it.
    assert_damage_found(&dir, "filters that lost their bits", |b| {
        let handle = Table::open(b).unwrap().filter_handle.unwrap();
        let (start, size) = (handle.offset as usize, handle.size as usize);
        let policy = leveldb_bloom::BloomPolicy::new(10).unwrap();
        let reader = leveldb_bloom::FilterBlockReader::new(&policy, &b[start..start + size]);
        let mut spans = Vec::new();
        for i in 0..reader.num_filters() as u64 {
            if let Some(f) = reader.filter(i).filter(|f| !f.is_empty()) {
                let at = f.as_ptr() as usize - b.as_ptr() as usize;
                spans.push(at..at + f.len().saturating_sub(1));
            }
        }
        for span in spans {
            b[span].fill(0);
        }
        let crc = crc32c::crc32c(&b[start..start + size + 1]);
        b[start + size + 1..start + size + 5].copy_from_slice(&table::mask_crc(crc).to_le_bytes());
        let block = RawBlock::locate(b, handle).unwrap();
        assert!(block.checksum_ok());
    });
}

#[test]
fn upgrade_to_compact_and_back_leaves_every_key_readable() {
    let n = 30_000;
    let (_tmp, dir, expected) = bloom_db(n);
    let d = dir.to_str().unwrap();
    for (format, kind) in [("compact", "compact_filters"), ("bloom", "bloom_filters")] {
        let out = run(&["upgrade", d, "--format", format, "--bits-per-key", "10"]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("before:") && stdout.contains("after:"),
            "{stdout}"
        );
        let json = inspect_json(&dir);
        let total = &json["total"];
        assert!(total["filters"].as_u64().unwrap() > 0);
        assert!(total[kind].as_u64().unwrap() > 0, "{format}: {total}");
        let other = if kind == "bloom_filters" {
            "compact_filters"
        } else {
            "bloom_filters"
        };
        assert_eq!(total[other], 0, "{format}: {total}");
        assert_reads(&dir, &expected, n);
        let out = run(&["verify", d]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

#[test]
fn usage_and_io_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["inspect"],
        vec!["frobnicate"],
        vec!["inspect", "/nonexistent/db"],
        vec!["inspect", tmp.path().to_str().unwrap()],
        vec![
            "upgrade",
            tmp.path().to_str().unwrap(),
            "--format",
            "bloom",
            "--bits-per-key",
            "9.5",
        ],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    }
}

#[test]
fn a_damaged_manifest_is_an_error_naming_the_file_and_offset() {
    let (_tmp, dir, _) = bloom_db(2000);
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let manifest = dir.join(current.trim());
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[10] ^= 0xff; // inside the first record: its checksum no longer matches
    std::fs::write(&manifest, &bytes).unwrap();
    // Damage found: exit status 1, for every command (upgrade rewrites nothing).
    for args in [
        vec!["inspect"],
        vec!["verify"],
        vec!["upgrade", "--format", "compact"],
    ] {
        let out = run(&[&args[..], &[dir.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(manifest.file_name().unwrap().to_str().unwrap())
                && stderr.contains("at offset 0"),
            "{}",
            text(&out)
        );
    }
    assert_eq!(
        std::fs::read(&manifest).unwrap(),
        bytes,
        "upgrade left the files alone"
    );
    // CURRENT naming something else, or a MANIFEST that is not there, is damage too.
    for current in ["../../etc/passwd\n", "MANIFEST-999999\n"] {
        std::fs::write(dir.join("CURRENT"), current).unwrap();
        let out = run(&["inspect", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{current}: {}", text(&out));
    }
}
