//! The command against databases made for each case that operators meet or that can be
//! crafted: what `verify` and `upgrade` say, judged by stock LevelDB (through the command's
//! own binding to it) wherever LevelDB can judge. A case LevelDB reads in full must pass
//! (at most a warning); one where LevelDB refuses, aborts or misses keys must be damage.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use leveldb_bloom_cli::leveldb::Db;
use leveldb_bloom_cli::table::{Table, mask_crc};

fn out_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The command run on the database `dir` with `args` first; it must exit with `code`.
fn run_on(args: &[&str], dir: &Path, code: i32, label: &str) -> std::process::Output {
    let out = run_bounded(&[args, &[path_str(dir)]].concat());
    assert_eq!(
        out.status.code(),
        Some(code),
        "{label}: {args:?}: {}",
        text(&out)
    );
    out
}

/// A new database at `dir` with LevelDB's Bloom filters, of `key(0..n)` with `value`'s
/// values, compacted after the first `compacted` of them: still open, the rest in its log.
/// And what every key reads.
fn bloom_db_compacted_after(
    dir: &Path,
    n: u64,
    compacted: u64,
    value: impl Fn(u64) -> String,
) -> (Db, Expected) {
    let mut expected = Expected::new();
    let db = Db::open(dir, Some(BLOOM), true, true).unwrap();
    for i in 0..n {
        let value = value(i).into_bytes();
        db.put(&key(i), &value).unwrap();
        expected.insert(key(i), value);
        if i + 1 == compacted {
            db.compact_all();
        }
    }
    (db, expected)
}

fn read_varint(data: &[u8], pos: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = data[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// A block's entries: (the file offset of the key bytes the entry stores, bytes shared with
/// the key before, the whole key).
fn entries(file: &[u8], offset: usize, size: usize) -> Vec<(usize, usize, Vec<u8>)> {
    let block = &file[offset..offset + size];
    let restarts = u32::from_le_bytes(block[size - 4..].try_into().unwrap()) as usize;
    let end = size - 4 - 4 * restarts;
    let (mut pos, mut key, mut out) = (0, Vec::new(), Vec::new());
    while pos < end {
        let shared = read_varint(block, &mut pos) as usize;
        let own = read_varint(block, &mut pos) as usize;
        let value = read_varint(block, &mut pos) as usize;
        key.truncate(shared);
        key.extend_from_slice(&block[pos..pos + own]);
        out.push((offset + pos, shared, key.clone()));
        pos += own + value;
    }
    out
}

/// Recomputes the checksum of the block at `offset` (`size` bytes, then its trailer).
fn reseal(file: &mut [u8], offset: usize, size: usize) {
    let crc = crc32c::crc32c_append(
        crc32c::crc32c(&file[offset..offset + size]),
        &file[offset + size..offset + size + 1],
    );
    file[offset + size + 1..offset + size + 5].copy_from_slice(&mask_crc(crc).to_le_bytes());
}

/// The first live table of `dir`, its bytes, and its first data block's and index block's
/// (offset, size).
fn first_table(dir: &Path) -> (PathBuf, Vec<u8>, (usize, usize), (usize, usize)) {
    let path = live_tables(dir).remove(0);
    let bytes = std::fs::read(&path).unwrap();
    let table = Table::open(&bytes).unwrap();
    let data = table.index[0].handle;
    let index = table.index_handle;
    let pair = |h: leveldb_bloom_cli::table::BlockHandle| (h.offset as usize, h.size as usize);
    let (data, index) = (pair(data), pair(index));
    (path, bytes.clone(), data, index)
}

#[test]
fn keys_out_of_order_and_separators_below_their_block_are_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 3000;
    let original = tmp.path().join("original");
    // Without filters, so that only the checks under test can find what is wrong.
    let expected = unfiltered_db(&original, n, |i| format!("value-{i:06}"));
    assert_eq!(
        run_bounded(&["verify", path_str(&original)]).status.code(),
        Some(0)
    );

    // Each case edits a copy's first table in place, recomputes the edited block's checksum,
    // and must be a case stock LevelDB misses keys in, and verify damage.
    type Edit = fn(&mut [u8], (usize, usize), (usize, usize)) -> (usize, usize);
    let cases: [(&str, Edit, &str); 2] = [
        (
            // A key at a restart point raised past the key after it (only the bytes the next
            // key does not share change).
            "a key raised past its neighbour",
            |bytes, data, _| {
                let block = entries(bytes, data.0, data.1);
                let i = (1..block.len() - 1)
                    .find(|&i| block[i].1 == 0 && block[i + 1].1 + 8 < block[i].2.len())
                    .expect("a restart point whose key the next shares in part");
                bytes[block[i].0 + block[i + 1].1] = 0xff;
                data
            },
            "keys out of order",
        ),
        (
            "the first separator lowered below its block's last key",
            |bytes, _, index| {
                let (key_at, shared, separator) = entries(bytes, index.0, index.1).remove(0);
                assert_eq!(shared, 0, "index blocks restart at every entry");
                bytes[key_at + separator.len() - 9] = 0; // the user key's last byte
                index
            },
            "separator",
        ),
    ];
    for (label, edit, said) in cases {
        let dir = tmp.path().join(label.replace(' ', "-"));
        copy_db(&original, &dir);
        let (path, mut bytes, data, index) = first_table(&dir);
        let (offset, size) = edit(&mut bytes, data, index);
        reseal(&mut bytes, offset, size);
        std::fs::write(&path, &bytes).unwrap();
        let read = records_read_back(&dir, &expected, n).unwrap();
        assert!(
            read < n,
            "{label}: stock LevelDB reads every record: the case proves nothing"
        );
        let out = run_bounded(&["verify", path_str(&dir)]);
        assert_eq!(out.status.code(), Some(1), "{label}: {}", text(&out));
        assert!(out_of(&out).contains(said), "{label}: {}", text(&out));
        println!("{label}: stock reads {read} of {n}; verify: damage");
    }
}

/// LevelDB's log writer (`db/log_writer.cc`): records cut into fragments at 32 KiB blocks,
/// a block's last 1 to 6 bytes zeroed.
fn log_file(records: &[Vec<u8>]) -> Vec<u8> {
    const BLOCK: usize = 32768;
    let mut out = Vec::new();
    for record in records {
        let mut rest = &record[..];
        let mut first = true;
        loop {
            let left = BLOCK - out.len() % BLOCK;
            if left < 7 {
                out.resize(out.len() + left, 0);
                continue;
            }
            let take = rest.len().min(left - 7);
            let last = take == rest.len();
            let kind: u8 = match (first, last) {
                (true, true) => 1,
                (true, false) => 2,
                (false, false) => 3,
                (false, true) => 4,
            };
            let crc = crc32c::crc32c_append(crc32c::crc32c(&[kind]), &rest[..take]);
            out.extend_from_slice(&mask_crc(crc).to_le_bytes());
            out.extend_from_slice(&(take as u16).to_le_bytes());
            out.push(kind);
            out.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            first = false;
            if last {
                break;
            }
        }
    }
    out
}

/// The records of the database's MANIFEST.
fn manifest_records(dir: &Path) -> Vec<Vec<u8>> {
    leveldb_bloom_cli::log_reader::log_records(&std::fs::read(manifest_of(dir)).unwrap()).unwrap()
}

#[test]
fn a_zeroed_block_inside_a_fragmented_manifest_record_is_damage() {
    let n = 2000;
    let (tmp, original, expected) = bloom_db(n);
    // The MANIFEST's records again, with a valid edit of 80,000 bytes (previous log numbers)
    // that spans three blocks.
    let mut records = manifest_records(&original);
    records.push([9u8, 0].repeat(40_000));
    let rewritten = log_file(&records);
    for zeroed in [false, true] {
        let dir = tmp.path().join(format!("zeroed-{zeroed}"));
        copy_db(&original, &dir);
        let mut bytes = rewritten.clone();
        if zeroed {
            bytes[32768..65536].fill(0); // the record's middle
        }
        std::fs::write(manifest_of(&dir), &bytes).unwrap();
        let out = run_bounded(&["verify", path_str(&dir)]);
        if zeroed {
            assert_eq!(out.status.code(), Some(1), "{}", text(&out));
            assert!(
                out_of(&out).contains("error in middle of record"),
                "{}",
                text(&out)
            );
            let opened = Db::open(&dir, Some(BLOOM), true, false).map(drop);
            assert!(opened.is_err(), "stock LevelDB opens it");
        } else {
            // The same MANIFEST whole: LevelDB reads it, so must verify.
            assert_eq!(out.status.code(), Some(0), "{}", text(&out));
            assert_reads(&dir, &expected, n);
        }
    }
}

#[test]
fn what_leveldb_aborts_on_is_damage_and_never_handed_to_leveldb() {
    let (tmp, original, _) = bloom_db(3000);
    let version = leveldb_bloom_cli::manifest::current_version(&original).unwrap();
    let deep = version
        .live
        .iter()
        .find(|t| t.file.level > 0)
        .expect("a table above level 0")
        .clone();

    // A second table over the same keys in the same level (Debian's LevelDB asserts at open,
    // version_set.cc), and a next file number LevelDB cannot go past (it aborts).
    let mut overlapping = vec![7];
    varint(u64::from(deep.file.level), &mut overlapping);
    varint(999_999, &mut overlapping);
    varint(deep.file.size, &mut overlapping);
    for key in [&deep.file.smallest, &deep.file.largest] {
        varint(key.len() as u64, &mut overlapping);
        overlapping.extend_from_slice(key);
    }
    let mut last_number = vec![3];
    varint(u64::MAX, &mut last_number);
    let cases: [(&str, Vec<u8>, &str); 2] = [
        ("overlapping tables", overlapping, "overlap"),
        ("next file number 2^64-1", last_number, "2^64-1"),
    ];
    for (label, edit, said) in cases {
        let dir = tmp.path().join(label.replace(' ', "-"));
        copy_db(&original, &dir);
        std::fs::copy(&deep.path, dir.join("999999.ldb")).unwrap();
        append_edit(&dir, edit);
        let before = std::fs::read(manifest_of(&dir)).unwrap();
        for args in [vec!["verify"], vec!["upgrade", "--format", "compact"]] {
            let out = run_on(&args, &dir, 1, label);
            assert!(out_of(&out).contains(said), "{label}: {}", text(&out));
        }
        assert_eq!(
            std::fs::read(manifest_of(&dir)).unwrap(),
            before,
            "{label}: left alone"
        );
    }
}

#[test]
fn what_leveldb_reads_in_full_passes() {
    let n = 3000;
    let (tmp, original, expected) = bloom_db(n);
    type Change = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Change, Option<&str>)> = vec![
        (
            "bytes appended to a table",
            Box::new(|dir: &Path| {
                let table = live_tables(dir).remove(0);
                let mut bytes = std::fs::read(&table).unwrap();
                bytes.extend_from_slice(b"JUNKJUNK");
                std::fs::write(table, bytes).unwrap();
            }),
            Some("8 bytes past the size the MANIFEST records"),
        ),
        (
            "a table extended to 2 GiB",
            Box::new(|dir: &Path| {
                let table = live_tables(dir).remove(0);
                let file = std::fs::OpenOptions::new().write(true).open(table).unwrap();
                file.set_len(2 << 30).unwrap();
            }),
            Some("bytes past the size the MANIFEST records"),
        ),
        (
            "CURRENT naming a MANIFEST in a subdirectory",
            Box::new(|dir: &Path| {
                let manifest = manifest_of(dir);
                let name = manifest.file_name().unwrap().to_owned();
                std::fs::create_dir(dir.join("sub")).unwrap();
                std::fs::rename(&manifest, dir.join("sub").join(&name)).unwrap();
                let current = format!("sub/{}\n", name.to_str().unwrap());
                std::fs::write(dir.join("CURRENT"), current).unwrap();
            }),
            None,
        ),
        (
            "CURRENT with bytes after a NUL",
            Box::new(|dir: &Path| {
                let name = manifest_of(dir).file_name().unwrap().to_owned();
                let current = format!("{}\0junk\n", name.to_str().unwrap());
                std::fs::write(dir.join("CURRENT"), current).unwrap();
            }),
            None,
        ),
        (
            "a MANIFEST whose name is not UTF-8",
            Box::new(|dir: &Path| {
                use std::os::unix::ffi::OsStrExt;
                let manifest = manifest_of(dir);
                let name = std::ffi::OsStr::from_bytes(b"MANIFEST-\xff");
                std::fs::rename(&manifest, dir.join(name)).unwrap();
                std::fs::write(dir.join("CURRENT"), b"MANIFEST-\xff\n").unwrap();
            }),
            None,
        ),
        (
            "a dangling .ldb link beside the .sst",
            Box::new(|dir: &Path| {
                let table = live_tables(dir).remove(0);
                std::fs::rename(&table, table.with_extension("sst")).unwrap();
                std::os::unix::fs::symlink("/nonexistent/table", &table).unwrap();
            }),
            None,
        ),
        (
            "an empty .ldb beside the whole .sst",
            Box::new(|dir: &Path| {
                let table = live_tables(dir).remove(0);
                std::fs::rename(&table, table.with_extension("sst")).unwrap();
                std::fs::write(&table, b"").unwrap();
            }),
            None,
        ),
    ];
    for (label, change, warned) in cases {
        let dir = tmp.path().join(label.replace(' ', "-"));
        copy_db(&original, &dir);
        change(&dir);
        let out = run_bounded(&["verify", path_str(&dir)]);
        assert_eq!(out.status.code(), Some(0), "{label}: {}", text(&out));
        if let Some(warning) = warned {
            assert!(out_of(&out).contains(warning), "{label}: {}", text(&out));
        }
        // Stock LevelDB reads every record (opening it may rewrite CURRENT and the
        // MANIFEST, so it judges last).
        assert_reads(&dir, &expected, n);
        println!("{label}: verify exit 0, stock LevelDB reads all {n} records");
    }
}

#[test]
fn a_database_whose_every_key_is_deleted_upgrades_in_one_run() {
    let n = 3000;
    let (_tmp, dir, _) = bloom_db(n);
    let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
    for i in 0..n {
        db.delete(&key(i)).unwrap();
    }
    drop(db);
    // Reopening writes the deletions into a table of their own.
    drop(Db::open(&dir, Some(BLOOM), true, false).unwrap());
    assert!(!live_tables(&dir).is_empty(), "tables of deletion markers");
    let out = run_bounded(&["upgrade", path_str(&dir), "--format", "compact"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let again = run_bounded(&["upgrade", path_str(&dir), "--format", "compact"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_reads(&dir, &Expected::new(), n);
}

#[test]
fn a_table_copied_out_of_its_database_reads_as_what_it_is() {
    let (tmp, dir, _) = bloom_db(3000);
    let copied = tmp.path().join("copied.ldb");
    std::fs::copy(live_tables(&dir).remove(0), &copied).unwrap();
    let out = run_bounded(&["verify", path_str(&copied)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Said plainly when the keys are not the kind --keys names.
    let out = run_bounded(&["verify", "--keys", "user", path_str(&dir)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(out_of(&out).contains("internal keys"), "{}", text(&out));
}

#[test]
fn names_are_printed_escaped_and_statuses_are_as_documented() {
    let tmp = tempfile::tempdir().unwrap();
    let hostile = tmp.path().join("db\x1b[31m");
    let out = run_bounded(&["verify", path_str(&hostile)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        !out_of(&out).contains('\x1b') && out_of(&out).contains("\\u{1b}"),
        "{}",
        text(&out)
    );
    // A file that is not a table is a usage error, not damage.
    let out = run_bounded(&["verify", "/etc/passwd"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // Help that cannot be written is an I/O error.
    let full = std::fs::File::create("/dev/full").unwrap();
    let status = command().arg("--help").stdout(full).status().unwrap();
    assert_eq!(status.code(), Some(2));
}

/// The writer of [`a_database_being_written_is_in_use_never_damaged`], in a process of its
/// own: opens the database named by `LEVELDB_BLOOM_TEST_WRITER` and writes batches of
/// 1,000 records until a file `stop` appears beside it.
#[test]
#[ignore = "started by a_database_being_written_is_in_use_never_damaged"]
fn writer_process() {
    let Some(dir) = std::env::var_os("LEVELDB_BLOOM_TEST_WRITER") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let db = Db::open(&dir, Some(BLOOM), true, true).unwrap();
    let stop = dir.with_extension("stop");
    let mut round = 0u64;
    while !stop.exists() {
        for i in 0..1000 {
            db.put(&key(round * 1000 % 20_000 + i), format!("w{i}").as_bytes())
                .unwrap();
        }
        round += 1;
    }
}

#[test]
fn a_database_being_written_is_in_use_never_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut writer = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "writer_process"])
        .env("LEVELDB_BLOOM_TEST_WRITER", &dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    while !dir.join("CURRENT").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    for round in 0..6 {
        for args in [
            vec!["verify"],
            vec!["inspect"],
            vec!["upgrade", "--format", "compact"],
        ] {
            let out = run_on(&args, &dir, 2, &format!("round {round}"));
            assert!(out_of(&out).contains("in use"), "{}", text(&out));
        }
    }
    std::fs::write(dir.with_extension("stop"), b"").unwrap();
    assert!(writer.wait().unwrap().success());
    // Two upgrades at once: one does the work, the other finds the database in use.
    let both: Vec<_> = (0..2)
        .map(|_| {
            command()
                .args(["upgrade", path_str(&dir), "--format", "compact"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let statuses: Vec<_> = both
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(matches!(out.status.code(), Some(0 | 2)), "{}", text(&out));
            out.status.code()
        })
        .collect();
    assert!(statuses.contains(&Some(0)), "{statuses:?}");
    let out = run_bounded(&["verify", path_str(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// Every file of the database `dir` but LevelDB's own log of what it did (`LOG`, `LOG.old`)
/// and its lock file, by name, with its bytes.
/// LevelDB's `RepairDB` on the database `dir`.
fn repair(dir: &Path) {
    let name = std::ffi::CString::new(path_str(dir)).unwrap();
    let mut err = std::ptr::null_mut();
    // SAFETY: no preconditions; returns an owned options object.
    let options = unsafe { leveldb_sys::leveldb_options_create() };
    // SAFETY: live options, a NUL-terminated name and a valid out-pointer; LevelDB's error,
    // if any, is a string from malloc, checked and then freed.
    unsafe {
        leveldb_sys::leveldb_repair_db(options, name.as_ptr(), &mut err);
        assert!(err.is_null(), "RepairDB failed");
        leveldb_sys::leveldb_options_destroy(options);
    }
}

#[test]
fn a_damaged_write_ahead_log_is_damage_and_upgrade_touches_nothing() {
    // 20,000 records in tables, 3,000 more only in the write-ahead log (closed without a
    // compaction), one byte of the log flipped in its middle.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let (in_tables, n) = (20_000, 23_000);
    let (db, expected) = bloom_db_compacted_after(&dir, n, in_tables, |i| {
        format!("value-{i}-{}", "y".repeat((i % 40) as usize))
    });
    drop(db);
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .expect("a write-ahead log");
    let mut bytes = std::fs::read(&log).unwrap();
    assert!(bytes.len() > 64 * 1024, "the log holds the last records");
    // Whole, the log's records are counted with the tables'.
    let out = run_on(&["verify"], &dir, 0, "a whole log");
    assert!(
        out_of(&out).contains("; 3000 records in 1 write-ahead log, checksummed"),
        "{}",
        text(&out)
    );
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    let files = data_files(&dir);

    // verify and inspect name the log and where it is damaged.
    let log_name = log.file_name().unwrap().to_str().unwrap();
    let out = run_on(&["verify"], &dir, 1, "damaged log");
    let said = out_of(&out);
    assert!(
        said.contains(&format!("{log_name}: at offset ")) && said.contains("checksum mismatch"),
        "{said}"
    );
    assert!(
        said.contains("and 1 of 1 write-ahead log") && said.contains("RepairDB"),
        "{said}"
    );
    let out = run_on(&["inspect"], &dir, 1, "damaged log");
    assert!(out_of(&out).contains(log_name), "{}", text(&out));
    let out = run_on(&["inspect", "--json"], &dir, 1, "damaged log");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["logs"][0]["file"], log_name);
    assert!(json["logs"][0]["damage"]["offset"].as_u64().unwrap() > 0);
    assert_eq!(
        data_files(&dir),
        files,
        "the reading commands changed the database"
    );

    // Stock LevelDB with paranoid checks refuses it.
    let refused = records_read_back(&dir, &expected, n).unwrap_err();
    assert!(refused.starts_with("Corruption:"), "{refused}");
    // So does upgrade, as damage, before LevelDB opens it, and it changes no file.
    let out = run_on(&["upgrade", "--format", "compact"], &dir, 1, "damaged log");
    assert!(
        out_of(&out).contains("damaged") && out_of(&out).contains(log_name),
        "{}",
        text(&out)
    );
    assert_eq!(data_files(&dir), files, "upgrade changed the database");

    // The records are still there to recover: RepairDB on a copy reads the tables' and the
    // log's undamaged records.
    let copy = tmp.path().join("copy");
    copy_db(&dir, &copy);
    repair(&copy);
    let recovered = records_read_back(&copy, &expected, n).unwrap();
    assert!(
        recovered > in_tables && recovered < n,
        "{recovered} of {n} recovered"
    );
}

#[test]
fn tables_outside_the_version_holding_its_lost_records_are_damage_and_kept() {
    // 15,000 records compacted, then 5,000 more compacted: the MANIFEST's edits of the second
    // compaction are then zero-filled, its size kept (what a torn write of preallocated space
    // leaves). LevelDB's log reader skips zeros: the version falls back to the first
    // compaction's, and the second's tables, holding the last 5,000 records, are orphans.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let (first, n) = (15_000, 20_000);
    let (db, expected) = bloom_db_compacted_after(&dir, n, first, |i| format!("value-{i}"));
    let edits_before_second =
        leveldb_bloom_cli::log_reader::log_records_at(&std::fs::read(manifest_of(&dir)).unwrap())
            .unwrap()
            .len();
    db.compact_all();
    drop(db);
    let manifest = manifest_of(&dir);
    let mut bytes = std::fs::read(&manifest).unwrap();
    let records = leveldb_bloom_cli::log_reader::log_records_at(&bytes).unwrap();
    assert!(
        records.len() > edits_before_second,
        "the second compaction's edits"
    );
    let from = records[edits_before_second].0;
    bytes[from..].fill(0);
    std::fs::write(&manifest, &bytes).unwrap();
    let files = data_files(&dir);

    let out = run_on(&["verify"], &dir, 1, "orphans holding lost records");
    let said = out_of(&out);
    assert!(
        said.contains("records the version lacks") && said.contains("RepairDB"),
        "{said}"
    );
    let out = run_on(&["upgrade", "--format", "compact"], &dir, 1, "orphans");
    assert!(out_of(&out).contains("damaged"), "{}", text(&out));
    assert_eq!(data_files(&dir), files, "upgrade changed the database");

    // Stock LevelDB, on a copy, misses records (here it refuses: the fallen-back version
    // names a table the second compaction deleted; where that table is still there it opens,
    // reads the first 15,000 and deletes the orphans). RepairDB, on another copy, recovers
    // every record.
    let opened = tmp.path().join("opened");
    copy_db(&dir, &opened);
    let read = records_read_back(&opened, &expected, n);
    assert!(read != Ok(n), "stock read {read:?}");
    let repaired = tmp.path().join("repaired");
    copy_db(&dir, &repaired);
    repair(&repaired);
    assert_reads(&repaired, &expected, n);
}

#[test]
fn tables_outside_the_version_whose_records_it_holds_are_a_note() {
    // A table a compaction replaced, put back beside the version (what a crash between the
    // compaction's MANIFEST edit and the deletion of its inputs leaves).
    let n = 5000;
    let (tmp, dir, expected) = bloom_db(n);
    let old = live_tables(&dir);
    let aside = tmp.path().join("aside");
    std::fs::create_dir(&aside).unwrap();
    for table in &old {
        std::fs::copy(table, aside.join(table.file_name().unwrap())).unwrap();
    }
    {
        let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
        db.put(&key(0), expected.get(&key(0)).map_or(&b"x"[..], |v| v))
            .unwrap();
        db.compact_all();
    }
    let mut put_back = 0;
    for table in &old {
        if !table.exists() {
            std::fs::copy(aside.join(table.file_name().unwrap()), table).unwrap();
            put_back += 1;
        }
    }
    assert!(put_back > 0, "the compaction replaced a table");
    let out = run_on(
        &["verify"],
        &dir,
        0,
        "orphans whose records the version holds",
    );
    assert!(out_of(&out).contains("note: "), "{}", text(&out));
    let expected = if expected.contains_key(&key(0)) {
        expected
    } else {
        let mut e = expected;
        e.insert(key(0), b"x".to_vec());
        e
    };
    assert_reads(&dir, &expected, n);
}

/// A database of `n` records in tables and `logged` more only in its write-ahead log (closed
/// without a compaction), in a scratch directory: what every key reads, its current
/// version, and its newest log's bytes with the records in them (at their offsets).
struct Logged {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    expected: Expected,
    version: leveldb_bloom_cli::manifest::Version,
    log: PathBuf,
}

fn db_with_logged_records(n: u64, logged: u64) -> Logged {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut expected = write_db(&dir, Some(BLOOM), true, n);
    let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
    for i in n..n + logged {
        let value = format!("logged-{i}").into_bytes();
        db.put(&key(i), &value).unwrap();
        expected.insert(key(i), value);
    }
    drop(db);
    let version = leveldb_bloom_cli::manifest::current_version(&dir).unwrap();
    let log = version.logs.last().unwrap().clone();
    Logged {
        tmp,
        dir,
        expected,
        version,
        log,
    }
}

impl Logged {
    /// Writes `bytes` as the newest log: how many of the `all` records stock LevelDB, with
    /// paranoid checks, reads of a copy of the database then.
    fn stock_reads_with_log(&self, bytes: &[u8], all: u64) -> u64 {
        std::fs::write(&self.log, bytes).unwrap();
        let copy = self.tmp.path().join("copy");
        copy_db(&self.dir, &copy);
        records_read_back(&copy, &self.expected, all).expect("stock LevelDB opens it")
    }

    /// The newest log's bytes, and its records at their offsets.
    fn log_records(&self) -> (Vec<u8>, Vec<(usize, Vec<u8>)>) {
        let bytes = std::fs::read(&self.log).unwrap();
        let records = leveldb_bloom_cli::log_reader::log_records_at(&bytes).unwrap();
        (bytes, records)
    }
}

const LOG_NUMBER: u8 = 2;
const NEXT_FILE: u8 = 3;
const LAST_SEQUENCE: u8 = 4;

#[test]
fn file_and_sequence_numbers_recovery_turns_into_loss_are_damage_until_repaired() {
    let (n, logged) = (5000, 500);
    let Logged {
        tmp,
        dir: original,
        expected,
        version,
        ..
    } = db_with_logged_records(n, logged);
    let highest_table = version.live.iter().map(|t| t.file.number).max().unwrap();
    let max_sequence = leveldb_bloom_cli::manifest::MAX_SEQUENCE;
    let cases = [
        // Stock LevelDB's own open loses records here: writing the log's records into a
        // table, it truncates a live one.
        (
            "next file number below a live table's",
            field_edit(NEXT_FILE, highest_table - 1),
            "next file number",
            false,
        ),
        (
            "next file number at the MANIFEST's own",
            field_edit(NEXT_FILE, version.manifest_number.unwrap()),
            "its own number",
            true,
        ),
        // Debian's LevelDB aborts at open (an assertion in VersionSet::LogAndApply).
        (
            "log number above the next file number",
            field_edit(LOG_NUMBER, version.next_file + 5),
            "its log number",
            false,
        ),
        (
            "last sequence number 3 below the maximum",
            field_edit(LAST_SEQUENCE, max_sequence - 3),
            "below LevelDB's maximum",
            true,
        ),
    ];
    let all = n + logged;
    for (label, edit, said, stock_reads_all) in cases {
        let dir = tmp.path().join(label.replace(' ', "-"));
        copy_db(&original, &dir);
        append_edit(&dir, edit);
        let files = data_files(&dir);
        for args in [
            vec!["verify"],
            vec!["inspect"],
            vec!["upgrade", "--format", "compact"],
        ] {
            let out = run_on(&args, &dir, 1, label);
            assert!(
                out_of(&out).contains(said) && out_of(&out).contains("RepairDB"),
                "{label}: {}",
                text(&out)
            );
        }
        assert_eq!(data_files(&dir), files, "{label}: the commands changed it");
        // Stock LevelDB opening a copy (in a process of its own): nothing lost yet, or lost
        // (or stopped) at its open.
        let copy = tmp.path().join(format!("{label} copy").replace(' ', "-"));
        let read = common::stock::stock_reads(&dir, &copy, false);
        assert_eq!(
            read.as_ref() == Ok(&expected),
            stock_reads_all,
            "{label}: {:?} of {all}",
            read.map(|r| r.len())
        );
        // The fix the command names: RepairDB on a copy, after which the database passes
        // and upgrades with every record.
        let repaired = tmp
            .path()
            .join(format!("{label} repaired").replace(' ', "-"));
        copy_db(&dir, &repaired);
        repair(&repaired);
        run_on(&["verify"], &repaired, 0, label);
        run_on(&["upgrade", "--format", "compact"], &repaired, 0, label);
        assert_eq!(
            records_read_back(&repaired, &expected, all),
            Ok(all),
            "{label}"
        );
    }
}

#[test]
fn a_live_log_numbered_at_the_next_file_number_is_what_a_crash_leaves_and_passes() {
    // LevelDB allocates a new log's number in memory and records it in the MANIFEST only at
    // the next compaction: a crash between leaves a MANIFEST whose next file number is at or
    // below the live log's (the MANIFEST's log number names the log before it). Recovery
    // marks the log's number used; nothing is lost. Made here by moving the live log to the
    // next file number.
    let (n, logged) = (5000, 500);
    let Logged {
        dir,
        expected,
        version,
        log,
        tmp: _tmp,
    } = db_with_logged_records(n, logged);
    assert!(version.log_number < version.next_file);
    std::fs::rename(log, dir.join(format!("{:06}.log", version.next_file))).unwrap();
    run_on(&["verify"], &dir, 0, "log at the next file number");
    run_on(
        &["upgrade", "--format", "compact"],
        &dir,
        0,
        "log at the next file number",
    );
    assert_reads(&dir, &expected, n + logged);
}

/// A database of 2,700 records, 700 in its log, whose log's last block is zeroed from the
/// header of its first record there to `end(records, i)` (the log's records, at their
/// offsets, and that record's index). Judged by stock LevelDB, which opens it without a
/// word; `verify` must say, at the zeroed header, `said`; `upgrade` must refuse it.
fn zeroed_in_the_logs_last_block(end: impl Fn(&[(usize, Vec<u8>)], usize) -> usize, said: &str) {
    let (n, logged) = (2000, 700);
    let db = db_with_logged_records(n, logged);
    let (mut bytes, records) = db.log_records();
    let last_block = bytes.len() / 32768 * 32768;
    let i = records
        .iter()
        .position(|(offset, _)| *offset >= last_block)
        .expect("a record starts in the last block");
    let start = records[i].0;
    bytes[start..end(&records, i)].fill(0);
    let all = n + logged;
    let read = db.stock_reads_with_log(&bytes, all);
    let (dir, log) = (db.dir.clone(), db.log.clone());
    let files = data_files(&dir);
    // Each record of the log is one put: stock reads none from the zeroed one on.
    assert_eq!(all - read, (records.len() - i) as u64);
    let skipped = all - read - 1;
    let said = said.replace("{skipped}", &skipped.to_string());

    let at = format!(
        "{}: at offset {start}: a zeroed header",
        log.file_name().unwrap().to_str().unwrap()
    );
    let out = run_on(&["verify"], &dir, 0, "zeroed header");
    assert!(
        out_of(&out).contains(&at) && out_of(&out).contains(&said),
        "{}",
        text(&out)
    );
    let out = run_on(&["inspect"], &dir, 0, "zeroed header");
    assert!(out_of(&out).contains(&at), "{}", text(&out));
    let out = run_on(&["inspect", "--json"], &dir, 0, "zeroed header");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skip = &json["logs"].as_array().unwrap().last().unwrap()["skipped"][0];
    assert_eq!(skip["offset"], start as u64, "{skip}");
    // upgrade does not make the loss final.
    let out = run_on(
        &["upgrade", "--format", "compact"],
        &dir,
        1,
        "zeroed header",
    );
    assert!(out_of(&out).contains(&at), "{}", text(&out));
    assert_eq!(data_files(&dir), files, "upgrade changed the database");
}

#[test]
fn a_zeroed_header_that_makes_leveldb_skip_intact_records_is_said() {
    // One record zeroed: LevelDB's recovery skips the rest of the block without a word,
    // even with paranoid checks, and the intact records after it.
    zeroed_in_the_logs_last_block(|r, i| r[i + 1].0, "with it {skipped} intact records");
}

#[test]
fn a_zeroed_stretch_that_destroys_records_and_leaves_their_tail_is_said() {
    // Zeros into the log's last record: nothing intact after the zeroed header, but that
    // record's tail is there (a writer's preallocated space would be zeros to the block's
    // end). Found by the differential fuzzer.
    zeroed_in_the_logs_last_block(|r, _| r.last().unwrap().0 + 20, "that are not zero");
}

#[test]
fn a_newest_log_zeroed_to_its_end_is_what_a_crash_leaves_and_passes() {
    // A file whose length reached the disk before its last data: zeros from a record's
    // header to the end. LevelDB with paranoid checks reads the records before them without
    // complaint, and so does verify (no intact record is skipped). Found by the
    // differential fuzzer, whose oracle takes it for a crash.
    let (n, logged) = (2000, 300);
    let db = db_with_logged_records(n, logged);
    let (mut bytes, records) = db.log_records();
    let (start, lost) = (records[records.len() - 10].0, 10);
    bytes[start..].fill(0);
    let read = db.stock_reads_with_log(&bytes, n + logged);
    assert_eq!(read, n + logged - lost);
    let out = run_on(&["verify"], &db.dir, 0, "zeroed to the end");
    assert!(!out_of(&out).contains("warning"), "{}", text(&out));
}

#[test]
fn a_last_log_record_whose_length_claims_past_the_end_is_damage() {
    // One bit of the last record's length field flipped upward: it claims more bytes than
    // the log holds, and LevelDB, even with paranoid checks, drops it as a torn write,
    // silently, though the bytes after its header hold it whole. Found by the differential
    // fuzzer; verify must not say ok, and upgrade must not make the loss final.
    let (n, logged) = (2000, 300);
    let db = db_with_logged_records(n, logged);
    let (mut bytes, records) = db.log_records();
    let start = records.last().unwrap().0;
    assert!(bytes.len() - start < 0x4000, "the last record is short");
    bytes[start + 5] ^= 0x40;
    let read = db.stock_reads_with_log(&bytes, n + logged);
    assert_eq!(read, n + logged - 1, "stock LevelDB drops the record");
    let (dir, log) = (db.dir.clone(), db.log.clone());
    let files = data_files(&dir);
    let at = format!(
        "{}: at offset {start}",
        log.file_name().unwrap().to_str().unwrap()
    );
    let out = run_on(&["verify"], &dir, 1, "a length field claiming past the end");
    assert!(
        out_of(&out).contains(&at) && out_of(&out).contains("length field is damaged"),
        "{}",
        text(&out)
    );
    run_on(
        &["upgrade", "--format", "compact"],
        &dir,
        1,
        "a length field claiming past the end",
    );
    assert_eq!(data_files(&dir), files, "upgrade changed the database");
}

/// `table` (its data blocks' contents, its metaindex and index as they are) written again
/// with every data block stored as `kind` by `compress`, checksums right.
fn recompressed(table: &[u8], kind: u8, compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    use leveldb_bloom_cli::table::{BlockHandle, RawBlock};
    let parsed = Table::open(&table).unwrap();
    let mut file = Vec::new();
    let put = |file: &mut Vec<u8>, kind: u8, stored: &[u8]| {
        let handle = BlockHandle {
            offset: file.len() as u64,
            size: stored.len() as u64,
        };
        file.extend_from_slice(stored);
        file.push(kind);
        let crc = crc32c::crc32c_append(crc32c::crc32c(stored), &[kind]);
        file.extend_from_slice(&mask_crc(crc).to_le_bytes());
        handle
    };
    let handle_bytes = |h: BlockHandle| {
        let mut v = Vec::new();
        varint(h.offset, &mut v);
        varint(h.size, &mut v);
        v
    };
    // Every index entry a restart point of its own: shared 0, then the whole key.
    let mut index = Vec::new();
    let mut restarts = Vec::new();
    for entry in &parsed.index {
        let contents = RawBlock::locate(&table, entry.handle)
            .unwrap()
            .contents()
            .unwrap();
        let handle = handle_bytes(put(&mut file, kind, &compress(&contents)));
        let key = parsed.separator(entry);
        restarts.push(index.len() as u32);
        varint(0, &mut index);
        varint(key.len() as u64, &mut index);
        varint(handle.len() as u64, &mut index);
        index.extend_from_slice(key);
        index.extend_from_slice(&handle);
    }
    for restart in &restarts {
        index.extend_from_slice(&restart.to_le_bytes());
    }
    index.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
    let metaindex = RawBlock::locate(&table, parsed.metaindex)
        .unwrap()
        .contents()
        .unwrap()
        .into_owned();
    let meta = put(&mut file, 0, &metaindex);
    let index = put(&mut file, 0, &index);
    let mut footer = [handle_bytes(meta), handle_bytes(index)].concat();
    footer.resize(40, 0);
    footer.extend_from_slice(&0xdb47_7524_8b80_fb57u64.to_le_bytes());
    file.extend_from_slice(&footer);
    file
}

#[test]
fn blocks_other_leveldbs_compress_are_named_as_their_writers_write_them() {
    // A table stock LevelDB wrote uncompressed, without filters, its data blocks stored
    // again as each LevelDB stores them: Snappy (type 1, which LevelDB 1.23 reads: the
    // re-encoding is right), and zlib and raw deflate (leveldb-mcpe's types 2 and 4) and
    // zstd (LevelDB's newer releases, type 2), which it cannot read.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    unfiltered_db(&dir, 3000, |i| format!("value {i} {}", "v".repeat(40)));
    let table = std::fs::read(live_tables(&dir).remove(0)).unwrap();
    let entries = leveldb_table_entries(&live_tables(&dir).remove(0));
    assert!(entries > 0);
    type Compress = fn(&[u8]) -> Vec<u8>;
    let cases: [(&str, u8, Compress, Option<&str>); 4] = [
        (
            "snappy",
            1,
            |b| snap::raw::Encoder::new().compress_vec(b).unwrap(),
            None,
        ),
        (
            "zlib",
            2,
            |b| miniz_oxide::deflate::compress_to_vec_zlib(b, 6),
            Some(
                "a zlib-compressed block (compression type 2, as Minecraft Bedrock's LevelDB, leveldb-mcpe, writes it)",
            ),
        ),
        (
            "deflate",
            4,
            |b| miniz_oxide::deflate::compress_to_vec(b, 6),
            Some(
                "a raw-deflate-compressed block (compression type 4, as Minecraft Bedrock's LevelDB, leveldb-mcpe, writes it)",
            ),
        ),
        (
            "zstd",
            2,
            |b| ruzstd::encoding::compress_to_vec(b, ruzstd::encoding::CompressionLevel::Fastest),
            Some(
                "a zstd-compressed block (compression type 2, as LevelDB's newer releases write it)",
            ),
        ),
    ];
    for (name, kind, compress, named) in cases {
        let path = tmp.path().join(format!("{name}.ldb"));
        std::fs::write(&path, recompressed(&table, kind, compress)).unwrap();
        let out = run_bounded(&["verify", path_str(&path)]);
        match named {
            None => {
                assert_eq!(leveldb_table_entries(&path), entries, "{name}");
                assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
            }
            Some(named) => {
                assert_eq!(
                    leveldb_table_entries(&path),
                    -1,
                    "{name}: LevelDB 1.23 reads it"
                );
                assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
                assert!(
                    out_of(&out).contains(&format!("{named}: not readable by LevelDB 1.23")),
                    "{name}: {}",
                    text(&out)
                );
            }
        }
    }
}
