//! The command against the faults operators meet: a disk that fills during an upgrade, a
//! kill at any moment of one, a disk that fails a read, a read-only directory, a database
//! another process holds (a LevelDB or a goleveldb writer), tables swapped, truncated or
//! removed behind the MANIFEST's back, a CURRENT or MANIFEST that LevelDB refuses or
//! accepts, symlinks, FIFOs and devices where tables should be,
//! tables crafted to ask for unbounded work, and a standard error that cannot be written.
//! Each ends with what stock LevelDB reads back and `verify`'s verdict.
//!
//! The tests that mount a file system or drop privileges need root; they are ignored with
//! that reason, and `scripts/test` (which runs as root) runs them.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use common::*;
use leveldb_bloom_cli::leveldb::Db;
use leveldb_bloom_cli::way_back::{Fingerprint, Found, WayBack};
use serde_json::Value;

/// Whether every live table of the database carries compact filters (the upgrade's work):
/// LevelDB's policy name, compact filters and no Bloom filter in each.
fn all_compact(dir: &Path) -> bool {
    let json = inspect_json(dir);
    json["tables"].as_array().unwrap().iter().all(|t| {
        t["filter_policy"] == "leveldb.BuiltinBloomFilter2"
            && t["compact_filters"].as_u64() > Some(0)
            && t["bloom_filters"] == 0
    })
}

/// A database like one LevelDB 1.22 wrote without a filter policy: `n` records of
/// 100-byte values, compacted into a few tables, none with filters.
fn old_unfiltered_db(dir: &Path, n: u64) -> Expected {
    unfiltered_db(dir, n, |i| format!("{i:0>100}"))
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// A tmpfs of `bytes` mounted at a new directory under `parent`; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(parent: &Path, bytes: u64) -> Tmpfs {
        let at = parent.join(format!("tmpfs-{bytes}"));
        std::fs::create_dir(&at).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(&at)
            .status()
            .expect("run mount");
        assert!(status.success(), "mount a tmpfs (this test needs root)");
        Tmpfs(at)
    }
}

impl Tmpfs {
    /// Makes the file system `bytes` large.
    fn grow(&self, bytes: u64) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={bytes}")])
            .arg(&self.0)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount the tmpfs larger");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
#[ignore = "needs root to mount a small tmpfs (scripts/test runs it)"]
fn a_disk_that_fills_during_an_upgrade_never_reports_success() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 200_000;
    let original = tmp.path().join("original");
    let expected = old_unfiltered_db(&original, n);
    let size = dir_bytes(&original);
    let (mut failed, mut finished) = (0, 0);
    // From too little room to rewrite any table to plenty.
    for spare_mib in [1u64, 2, 4, 8, 12, 20, 64] {
        let fs = Tmpfs::mount(tmp.path(), size + (spare_mib << 20));
        let dir = fs.0.join("db");
        copy_db(&original, &dir);
        let out = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
        let upgraded = all_compact(&dir);
        println!(
            "{spare_mib} MiB spare: exit {:?}, every table compact: {upgraded}",
            out.status.code()
        );
        if out.status.code() == Some(0) {
            assert!(
                upgraded,
                "success reported for work not done: {}",
                text(&out)
            );
            finished += 1;
        } else if stderr(&out).contains("put back exactly as it was") {
            // Too full for LevelDB to open the database again to prove the result: put
            // back, file for file.
            assert_said(
                &out,
                1,
                &[
                    "No space left on device",
                    "free some space, then run the upgrade again",
                ],
            );
            assert_eq!(data_files(&dir), data_files(&original), "{}", text(&out));
            failed += 1;
        } else {
            // LevelDB failed part way: the way back is kept (what LevelDB wrote after an
            // error is not known to be on disk), and the message says how on.
            assert_said(
                &out,
                1,
                &["No space left on device", "free some space first", "--undo"],
            );
            assert!(
                dir.join("leveldb-bloom-way-back").is_dir(),
                "{}",
                text(&out)
            );
            failed += 1;
        }
        // The database as the full disk left it: verify finds nothing wrong, and stock
        // LevelDB reads every record back (from a copy: opening writes).
        let verify = run_bounded(&["verify", dir.to_str().unwrap()]);
        assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
        let copy = tmp.path().join(format!("after-{spare_mib}"));
        copy_db(&dir, &copy);
        assert_reads(&copy, &expected, n);
        // With room made, the next upgrade settles whatever the full disk left, and finishes.
        fs.grow(size * 4);
        run_on_ok(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
        assert!(all_compact(&dir) && !dir.join("leveldb-bloom-way-back").exists());
        assert_reads(&dir, &expected, n);
    }
    assert!(
        failed > 0 && finished > 0,
        "{failed} failed, {finished} finished"
    );
}

#[test]
fn a_table_the_disk_fails_to_read_is_an_io_error_not_damage() {
    // A failing disk's read error says nothing of the bytes on it: the command stops with
    // an I/O error (exit 2), naming it, and does not call the table damaged.
    let n = 3000;
    let (_tmp, dir, expected) = bloom_db(n);
    let table = live_tables(&dir)[0].clone();
    let name = table.file_name().unwrap().to_str().unwrap();
    let before = data_files(&dir);
    for args in [
        vec!["verify", dir.to_str().unwrap()],
        vec!["inspect", dir.to_str().unwrap()],
        vec!["verify", table.to_str().unwrap()],
        vec!["upgrade", dir.to_str().unwrap(), "--format", "compact"],
    ] {
        let mut cmd = command();
        cmd.args(&args)
            .env("LD_PRELOAD", read_error())
            .env("LEVELDB_BLOOM_FAULT_FILE", name);
        let out = run_within(cmd, LIMIT);
        assert_said(&out, 2, &[name, "Input/output error"]);
        assert!(
            !stdout(&out).contains("problem") && !stderr(&out).contains("damaged"),
            "{args:?}: {}",
            text(&out)
        );
        assert_eq!(data_files(&dir), before, "{args:?}: {}", text(&out));
        assert!(!dir.join("leveldb-bloom-way-back").exists());
    }
    run_on_ok(&["verify", dir.to_str().unwrap()]);
    assert_reads(&dir, &expected, n);
}

#[test]
#[ignore = "needs root to mount a small tmpfs (scripts/test runs it)"]
fn a_disk_too_full_to_settle_an_interrupted_upgrade_is_said_to_be_full() {
    // The way back an interrupted upgrade keeps holds the old tables' space, so the disk
    // may well be full when the next upgrade settles it; LevelDB then cannot open the
    // database to check it. That is a full disk, not a database written or damaged since.
    let n = 3000;
    let tmp = tempfile::tempdir().unwrap();
    let original = tmp.path().join("original");
    let expected = write_db(&original, Some(BLOOM), true, n);
    let fs = Tmpfs::mount(tmp.path(), dir_bytes(&original) * 4 + (1 << 20));
    let dir = fs.0.join("db");
    copy_db(&original, &dir);
    assert_eq!(upgrade_with_fault(&dir, "kill").status.code(), None);
    assert!(dir.join("leveldb-bloom-way-back").is_dir());
    let fill = fs.0.join("fill");
    {
        use std::io::Write as _;
        let mut file = std::fs::File::create(&fill).unwrap();
        while file.write_all(&[0; 1 << 16]).is_ok() {}
    }
    let out = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
    assert_said(&out, 1, &["No space left on device", "free some space"]);
    assert!(
        !stderr(&out).contains("a program wrote to the database since"),
        "{}",
        text(&out)
    );
    assert!(
        dir.join("leveldb-bloom-way-back").is_dir(),
        "{}",
        text(&out)
    );
    let copy = tmp.path().join("copy");
    copy_db(&dir, &copy);
    assert_reads(&copy, &expected, n);
    // With room made, the next upgrade settles it and finishes.
    std::fs::remove_file(&fill).unwrap();
    run_on_ok(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
    assert!(all_compact(&dir) && !dir.join("leveldb-bloom-way-back").exists());
    assert_reads(&dir, &expected, n);
}

#[test]
fn a_kill_at_any_moment_of_an_upgrade_leaves_every_record_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 60_000;
    let original = tmp.path().join("original");
    let expected = old_unfiltered_db(&original, n);
    // How long an upgrade takes, uninterrupted.
    let timing = tmp.path().join("timing");
    copy_db(&original, &timing);
    let start = Instant::now();
    let out = run_bounded(&["upgrade", timing.to_str().unwrap(), "--format", "compact"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let whole = start.elapsed();
    let mut rng = fastrand::Rng::with_seed(0x5161);
    let kills = 24;
    for i in 0..kills {
        let dir = tmp.path().join(format!("killed-{i}"));
        copy_db(&original, &dir);
        let after = whole.mul_f64(rng.f64() * 1.1);
        let mut child = command()
            .args(["upgrade", dir.to_str().unwrap(), "--format", "compact"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(after);
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        // Whatever the moment: verify finds nothing wrong, stock LevelDB reads every
        // record, and a second upgrade finishes the work.
        let verify = run_bounded(&["verify", dir.to_str().unwrap()]);
        assert_eq!(verify.status.code(), Some(0), "kill {i}: {}", text(&verify));
        assert_reads(&dir, &expected, n);
        let again = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
        assert_eq!(again.status.code(), Some(0), "kill {i}: {}", text(&again));
        assert!(all_compact(&dir), "kill {i}");
        assert_reads(&dir, &expected, n);
        println!("kill {i} after {after:?} ({status}): readable, then upgraded");
    }
}

#[test]
#[ignore = "needs root to run the command as another user (scripts/test runs it)"]
fn a_read_only_directory_is_an_error_and_left_alone() {
    let n = 5000;
    let (tmp, dir, expected) = bloom_db(n);
    use std::os::unix::fs::PermissionsExt;
    for p in [tmp.path(), &dir] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let files = |dir: &Path| {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let before = files(&dir);
    let as_nobody = |args: &[&str]| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_leveldb-bloom"))
            .args(args);
        run_within(cmd, LIMIT)
    };
    let d = dir.to_str().unwrap();
    let out = as_nobody(&["upgrade", d, "--format", "compact"]);
    assert_said(&out, 2, &["cannot take LevelDB's lock", "Permission"]);
    assert_eq!(files(&dir), before, "the directory is as it was");
    // Reading needs no write access.
    let out = as_nobody(&["verify", d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_reads(&dir, &expected, n);
}

#[test]
fn a_database_another_process_holds_is_refused_and_left_alone() {
    let n = 2000;
    let (_tmp, dir, expected) = bloom_db(n);
    let before = inspect_json(&dir);
    let held = Db::open(&dir, Some(BLOOM), true, false).unwrap();
    let out = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
    assert_said(&out, 2, &["another process has the database open"]);
    // Reading takes LevelDB's lock too, and says "in use" at once.
    for command in ["verify", "inspect"] {
        let out = run_bounded(&[command, dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", text(&out));
        assert!(stderr(&out).contains("in use"), "{command}: {}", text(&out));
        assert_eq!(stdout(&out), "", "{command}: nothing read, nothing said");
    }
    drop(held);
    assert_eq!(inspect_json(&dir)["total"], before["total"]);
    assert_reads(&dir, &expected, n);
}

/// `upgrade` of `dir` to compact filters with `fault` injected into LevelDB.
fn upgrade_with_fault(dir: &Path, fault: &str) -> std::process::Output {
    let mut cmd = command();
    cmd.args(["upgrade", dir.to_str().unwrap(), "--format", "compact"])
        .env("LD_PRELOAD", compaction_fault())
        .env("LEVELDB_BLOOM_FAULT", fault)
        .env("LEVELDB_BLOOM_FAULT_DB", dir);
    run_within(cmd, LIMIT)
}

/// What stock LevelDB reads of `key` in the database `dir` (from a copy: opening writes).
fn stock_get(dir: &Path, key: &[u8]) -> Option<Vec<u8>> {
    let copy = tempfile::tempdir().unwrap();
    copy_db(dir, copy.path());
    let db = Db::open(copy.path(), Some(BLOOM), true, false).unwrap();
    db.get(key).unwrap()
}

#[test]
fn writes_another_process_made_while_the_command_let_go_are_never_undone() {
    let n = 3000;
    let way_back = |dir: &Path| dir.join("leveldb-bloom-way-back");
    let (_tmp, dir, expected) = bloom_db(n);
    let before = data_files(&dir);
    // The rewrite loses a record, and before the command puts the database back, another
    // process writes (LevelDB's closing released the lock): its write stays.
    let out = upgrade_with_fault(&dir, "lose-and-let-in");
    assert_said(
        &out,
        1,
        &[
            "the upgrade is not proven",
            "another process wrote",
            "--undo",
        ],
    );
    assert_eq!(
        stock_get(&dir, b"written by another").as_deref(),
        Some(&b"process"[..])
    );
    assert!(way_back(&dir).exists());
    // The operator's call: --undo puts the files back as they were before the upgrade.
    let out = run_on_ok(&["upgrade", "--undo", dir.to_str().unwrap()]);
    assert!(stdout(&out).contains("put back"), "{}", text(&out));
    assert_eq!(data_files(&dir), before);
    assert_reads(&dir, &expected, n);
}

#[test]
fn a_name_the_command_did_not_make_and_a_refusal_change_nothing() {
    let n = 2000;
    let (_tmp, dir, expected) = bloom_db(n);
    let d = dir.to_str().unwrap();
    // A file under the way back's name is not taken for one, nor removed.
    std::fs::write(dir.join("leveldb-bloom-way-back"), "the operator's").unwrap();
    let before = data_files(&dir);
    let out = run_bounded(&["upgrade", d, "--format", "compact"]);
    assert_said(&out, 2, &["move it away"]);
    let out = run_bounded(&["upgrade", "--undo", d]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = run_on_ok(&["verify", d]);
    assert!(stdout(&out).contains("is not one"), "{}", text(&out));
    assert_eq!(data_files(&dir), before);
    std::fs::remove_file(dir.join("leveldb-bloom-way-back")).unwrap();
    // A database without LOCK that upgrade refuses gets none.
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    append_edit(&dir, field_edit(3, 1));
    let out = run_bounded(&["upgrade", d, "--format", "compact"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!dir.join("LOCK").exists(), "a refusal created LOCK");
    let _ = expected;
}

#[test]
fn an_upgrade_that_changes_the_records_is_put_back_exactly_as_it_was() {
    let n = 3000;
    let (_tmp, dir, expected) = bloom_db(n);
    let before = data_files(&dir);
    let out = upgrade_with_fault(&dir, "lose");
    assert_said(
        &out,
        1,
        &["the upgrade is not proven", "put back exactly as it was"],
    );
    assert_eq!(data_files(&dir), before, "put back file for file");
    assert!(!dir.join("leveldb-bloom-way-back").exists());
    run_on_ok(&["verify", dir.to_str().unwrap()]);
    assert_reads(&dir, &expected, n);
    // Without the fault, the same database upgrades, and keeps no way back.
    run_on_ok(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
    assert!(all_compact(&dir) && !dir.join("leveldb-bloom-way-back").exists());
    assert_reads(&dir, &expected, n);
}

#[test]
fn an_upgrade_killed_before_its_proof_is_settled_by_the_next() {
    let n = 3000;
    let tmp = tempfile::tempdir().unwrap();
    let original = tmp.path().join("original");
    let expected = write_db(&original, Some(BLOOM), true, n);
    let way_back = |dir: &Path| dir.join("leveldb-bloom-way-back");

    // Killed after LevelDB's compaction: the next upgrade finds LevelDB reads what it read
    // before, removes the way back and finishes.
    let dir = tmp.path().join("killed");
    copy_db(&original, &dir);
    let out = upgrade_with_fault(&dir, "kill");
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
    assert!(way_back(&dir).exists());
    let verify = run_on_ok(&["verify", dir.to_str().unwrap()]);
    assert!(
        stdout(&verify).contains("an upgrade that did not finish"),
        "{}",
        text(&verify)
    );
    run_on_ok(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
    assert!(all_compact(&dir) && !way_back(&dir).exists());
    assert_reads(&dir, &expected, n);

    // Killed as it began putting the database back (made here by beginning the put-back of
    // a killed upgrade's way back): the next upgrade finishes putting back, and stops; but
    // not after another process wrote.
    for written_since in [false, true] {
        let dir = tmp
            .path()
            .join(format!("killed-putting-back-{written_since}"));
        copy_db(&original, &dir);
        let before = data_files(&dir);
        assert_eq!(upgrade_with_fault(&dir, "kill").status.code(), None);
        let Found::WayBack(left) = WayBack::found(&dir) else {
            panic!("a way back");
        };
        left.begin_put_back(&Fingerprint::of(&dir).unwrap())
            .unwrap();
        if written_since {
            let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
            db.put(b"written since", b"by another program").unwrap();
        }
        let out = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        if written_since {
            assert!(
                stderr(&out).contains("another process wrote"),
                "{}",
                text(&out)
            );
            assert_eq!(
                stock_get(&dir, b"written since").as_deref(),
                Some(&b"by another program"[..])
            );
            assert!(way_back(&dir).exists());
        } else {
            assert!(stderr(&out).contains("that is finished"), "{}", text(&out));
            assert_eq!(data_files(&dir), before, "put back file for file");
            assert!(!way_back(&dir).exists());
        }
    }

    // Killed, then a program writes: the next upgrade cannot tell that from a loss, touches
    // nothing and names both ways on; --undo puts back the files as they were before.
    let dir = tmp.path().join("killed-then-written");
    copy_db(&original, &dir);
    let before = data_files(&dir);
    assert_eq!(upgrade_with_fault(&dir, "kill").status.code(), None);
    {
        let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
        db.put(b"written after the kill", b"by another program")
            .unwrap();
    }
    let left = data_files(&dir);
    let out = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
    assert_said(
        &out,
        1,
        &[
            "a program wrote to the database since, it was damaged since, or the upgrade lost",
            "--undo",
        ],
    );
    assert!(way_back(&dir).exists());
    let out = run_on_ok(&["upgrade", "--undo", dir.to_str().unwrap()]);
    assert!(stdout(&out).contains("put back"), "{}", text(&out));
    assert_eq!(data_files(&dir), before, "put back file for file");
    assert_ne!(left, before);
    assert!(!way_back(&dir).exists());
    assert_reads(&dir, &expected, n);
    let out = run_bounded(&["upgrade", "--undo", dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "nothing to undo: {}",
        text(&out)
    );
}

/// The command on `args`: it must succeed.
fn run_on_ok(args: &[&str]) -> std::process::Output {
    let out = run_bounded(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    out
}

/// The goleveldb writer (`goleveldb_writer/main.go`), built with Debian's goleveldb package
/// (golang-github-syndtr-goleveldb-dev) in GOPATH mode.
fn goleveldb_writer() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let binary = tmp.join("goleveldb-writer");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/goleveldb_writer/main.go");
    build(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&binary)
            .arg(&source)
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode")
            .env("GOCACHE", tmp.join("go-cache"))
            .env("GOFLAGS", ""),
        "go, building the goleveldb writer (Debian: golang-go, golang-github-syndtr-goleveldb-dev)",
    );
    binary
}

#[test]
fn a_live_goleveldb_writer_makes_the_database_in_use_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut writer = Command::new(goleveldb_writer())
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(writer.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "writing");
    let d = dir.to_str().unwrap();
    for args in [
        &["verify", d][..],
        &["inspect", d],
        &["inspect", "--json", d],
        &["upgrade", d, "--format", "compact"],
        &["upgrade", d, "--format", "bloom"],
    ] {
        let out = run_bounded(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(stderr(&out).contains("in use"), "{args:?}: {}", text(&out));
        assert_eq!(stdout(&out), "", "{args:?}: nothing read, nothing said");
    }
    drop(writer.stdin.take());
    let last = lines.next().unwrap().unwrap();
    assert!(writer.wait().unwrap().success());
    let acknowledged: u64 = last.strip_prefix("acknowledged ").unwrap().parse().unwrap();
    // Every acknowledged record, read by stock LevelDB.
    let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
    let read = (0..acknowledged)
        .filter(|i| db.get(format!("key{i:08}").as_bytes()).unwrap() == Some(vec![0; 100]))
        .count() as u64;
    assert_eq!(read, acknowledged);
    drop(db);
    // Closed, the database is the command's to upgrade.
    let out = run_bounded(&["upgrade", d, "--format", "compact"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A database of several tables, and a second one of the same shape (the same table sizes)
/// but other keys.
fn twin_databases(tmp: &Path, n: u64) -> (PathBuf, PathBuf, Expected) {
    let write = |dir: &Path, prefix: u8| {
        let mut expected = Expected::new();
        let db = Db::open(dir, Some(BLOOM), false, true).unwrap();
        for i in 0..n {
            let mut k = key(i);
            k[0] = prefix;
            let value = format!("{i:0>150}").into_bytes();
            db.put(&k, &value).unwrap();
            expected.insert(k, value);
        }
        db.compact_all();
        expected
    };
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    let expected = write(&a, b'k');
    write(&b, b'q');
    (a, b, expected)
}

/// Keys as `twin_databases` wrote them in the first database.
fn twin_key(i: u64) -> Vec<u8> {
    let mut k = key(i);
    k[0] = b'k';
    k
}

/// How many of the first database's records stock LevelDB reads back from `dir`, or `Err`
/// if it cannot open it.
fn twin_records_read(dir: &Path, expected: &Expected, n: u64) -> Result<u64, String> {
    let db = Db::open(dir, Some(BLOOM), true, false).map_err(|e| e.to_string())?;
    Ok((0..n)
        .filter(|&i| db.get(&twin_key(i)).ok().flatten().as_ref() == expected.get(&twin_key(i)))
        .count() as u64)
}

#[test]
fn tables_swapped_truncated_or_removed_behind_the_manifest_are_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 40_000;
    let (a, _twin, expected) = twin_databases(tmp.path(), n);
    assert_eq!(twin_records_read(&a, &expected, n), Ok(n));
    let tables = live_tables(&a);
    assert!(tables.len() >= 3, "{tables:?}");
    let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
    type Damage = Box<dyn Fn(&Path, &[PathBuf])>;
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "another table of the database copied over a table",
            Box::new(|_, t: &[PathBuf]| {
                std::fs::copy(&t[1], &t[0]).unwrap();
            }),
            "the MANIFEST says",
        ),
        (
            "the same table of a twin database (same size, other keys) in its place",
            Box::new(|dir: &Path, t: &[PathBuf]| {
                let twin = live_tables(&dir.parent().unwrap().join("b"));
                let same = twin.iter().find(|p| p.file_name() == t[0].file_name());
                std::fs::copy(same.expect("the twin has the table"), &t[0]).unwrap();
            }),
            "its keys run from",
        ),
        (
            "a table truncated",
            Box::new(|_, t: &[PathBuf]| {
                let bytes = std::fs::read(&t[0]).unwrap();
                std::fs::write(&t[0], &bytes[..bytes.len() - 100]).unwrap();
            }),
            "the MANIFEST says",
        ),
        (
            "a table removed",
            Box::new(|_, t: &[PathBuf]| std::fs::remove_file(&t[0]).unwrap()),
            "missing",
        ),
    ];
    for (label, damage, said) in cases {
        let dir = tmp.path().join("case");
        let _ = std::fs::remove_dir_all(&dir);
        copy_db(&a, &dir);
        let victims = live_tables(&dir);
        damage(&dir, &victims);
        let out = run_bounded(&["verify", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{label}: {}", text(&out));
        assert!(
            stdout(&out).contains(&name(&victims[0])) && stdout(&out).contains(said),
            "{label}: {}",
            text(&out)
        );
        let up = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "compact"]);
        assert_eq!(up.status.code(), Some(1), "{label}: {}", text(&up));
        // verify is right: stock LevelDB cannot read every record back.
        let read = twin_records_read(&dir, &expected, n);
        println!("{label}: verify exit 1; stock LevelDB reads {read:?} of {n} records");
        assert_ne!(
            read,
            Ok(n),
            "{label}: LevelDB reads it all, verify was wrong"
        );
    }
}

#[test]
fn symlinks_fifos_and_devices_in_a_tables_place() {
    let n = 10_000;
    let (tmp, original, expected) = bloom_db(n);
    // What is put in the table's place, and the problem verify names (none: it reads).
    type Setup = (&'static str, fn(&Path, &Path), Option<&'static str>);
    let setups: Vec<Setup> = vec![
        (
            "a symlink to a copy of the table",
            |table, elsewhere| {
                std::fs::rename(table, elsewhere).unwrap();
                std::os::unix::fs::symlink(elsewhere, table).unwrap();
            },
            None,
        ),
        (
            "a symlink to /dev/zero",
            |table, _| {
                std::fs::remove_file(table).unwrap();
                std::os::unix::fs::symlink("/dev/zero", table).unwrap();
            },
            Some("a character device, not a regular file"),
        ),
        (
            "a FIFO",
            |table, _| {
                std::fs::remove_file(table).unwrap();
                mkfifo(table);
            },
            Some("a FIFO, not a regular file"),
        ),
        (
            "a directory",
            |table, _| {
                std::fs::remove_file(table).unwrap();
                std::fs::create_dir(table).unwrap();
            },
            Some("a directory, not a regular file"),
        ),
    ];
    for (i, (label, setup, problem)) in setups.into_iter().enumerate() {
        let dir = tmp.path().join(format!("case-{i}"));
        copy_db(&original, &dir);
        let table = live_tables(&dir).remove(0);
        setup(&table, &tmp.path().join(format!("elsewhere-{i}")));
        for command in ["inspect", "verify"] {
            let out = run_bounded(&[command, dir.to_str().unwrap()]);
            match problem {
                None => assert_eq!(out.status.code(), Some(0), "{label}: {}", text(&out)),
                Some(said) => {
                    assert_eq!(out.status.code(), Some(1), "{label}: {}", text(&out));
                    assert!(stdout(&out).contains(said), "{label}: {}", text(&out));
                }
            }
        }
        if problem.is_none() {
            assert_reads(&dir, &expected, n);
        }
    }
    // CURRENT itself: a FIFO, a device.
    for (label, make) in [
        ("CURRENT a FIFO", mkfifo as fn(&Path)),
        ("CURRENT a symlink to /dev/zero", |p: &Path| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
    ] {
        let dir = tmp.path().join(label.replace(' ', "-"));
        copy_db(&original, &dir);
        std::fs::remove_file(dir.join("CURRENT")).unwrap();
        make(&dir.join("CURRENT"));
        let out = run_bounded(&["verify", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{label}: {}", text(&out));
        assert!(
            stderr(&out).contains("not a regular file"),
            "{label}: {}",
            text(&out)
        );
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn current_and_manifest_are_read_as_strictly_as_leveldb_reads_them() {
    let n = 3000;
    let (tmp, original, expected) = bloom_db(n);
    let case = |label: &str, damage: &dyn Fn(&Path)| {
        let dir = tmp.path().join(label.replace(' ', "-"));
        copy_db(&original, &dir);
        damage(&dir);
        let out = run_bounded(&["verify", dir.to_str().unwrap()]);
        let opened = Db::open(&dir, Some(BLOOM), true, false).map(drop);
        (out, opened, dir)
    };
    // LevelDB refuses these: so does verify.
    type Refused = (&'static str, Box<dyn Fn(&Path)>, &'static str);
    let refused: Vec<Refused> = vec![
        (
            "CURRENT without its newline",
            Box::new(|dir: &Path| {
                let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
                std::fs::write(dir.join("CURRENT"), current.trim_end()).unwrap();
            }),
            "does not end with a newline",
        ),
        (
            "CURRENT not UTF-8",
            Box::new(|dir: &Path| std::fs::write(dir.join("CURRENT"), b"\xff\xfe\n").unwrap()),
            "CURRENT",
        ),
        (
            "a MANIFEST record's byte flipped",
            Box::new(|dir: &Path| {
                let manifest = manifest_of(dir);
                let mut bytes = std::fs::read(&manifest).unwrap();
                bytes[10] ^= 0xff;
                std::fs::write(&manifest, bytes).unwrap();
            }),
            "checksum mismatch",
        ),
    ];
    for (label, damage, said) in refused {
        let (out, opened, _) = case(label, &*damage);
        assert_eq!(out.status.code(), Some(1), "{label}: {}", text(&out));
        assert!(stderr(&out).contains(said), "{label}: {}", text(&out));
        assert!(opened.is_err(), "{label}: LevelDB opens it");
    }
    // LevelDB reads these as they are: verify may warn, but passes them.
    let (out, opened, dir) = case("a record torn at the MANIFEST's end", &|dir: &Path| {
        let manifest = manifest_of(dir);
        let mut bytes = std::fs::read(&manifest).unwrap();
        bytes.extend_from_slice(&[0x12, 0x34, 0x56]); // half a record header
        std::fs::write(&manifest, bytes).unwrap();
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(opened, Ok(()));
    assert_reads(&dir, &expected, n);
}

/// A table whose metaindex points at a filter block that is not there: LevelDB reads it
/// without a filter. verify warns; upgrade rewrites it.
#[test]
fn a_bad_filter_handle_is_a_warning_not_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 3000;
    let dir = tmp.path().join("db");
    let expected = write_db(&dir, Some(BLOOM), false, n);
    let table = live_tables(&dir).remove(0);
    let mut bytes = std::fs::read(&table).unwrap();
    let parsed = leveldb_bloom_cli::table::Table::open(&bytes).unwrap();
    let filter = parsed.filter_handle.unwrap();
    let meta = parsed.metaindex;
    // The filter block's handle in the metaindex (uncompressed) is the varint pair of its
    // offset and size: point it past the end of the file, and mend the block's checksum.
    let encode = |mut v: u64, out: &mut Vec<u8>| loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        out.push(if v == 0 { byte } else { byte | 0x80 });
        if v == 0 {
            break;
        }
    };
    let mut old = Vec::new();
    encode(filter.offset, &mut old);
    encode(filter.size, &mut old);
    let (start, end) = (meta.offset as usize, (meta.offset + meta.size) as usize);
    let at = bytes[start..end]
        .windows(old.len())
        .position(|w| w == old)
        .expect("the handle in the metaindex")
        + start;
    // The largest offset its varint's length holds: past the end of this small file.
    let mut offset_len = Vec::new();
    encode(filter.offset, &mut offset_len);
    let past_end = (1u64 << (7 * offset_len.len())) - 1;
    assert!(past_end > bytes.len() as u64);
    let mut bad = Vec::new();
    encode(past_end, &mut bad);
    assert_eq!(bad.len(), offset_len.len());
    bytes[at..at + bad.len()].copy_from_slice(&bad);
    let crc = crc32c::crc32c(&bytes[start..end + 1]);
    bytes[end + 1..end + 5].copy_from_slice(&leveldb_bloom_cli::table::mask_crc(crc).to_le_bytes());
    std::fs::write(&table, &bytes).unwrap();
    let out = run_bounded(&["verify", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("warning:"), "{}", text(&out));
    assert!(
        stdout(&out).contains("without filters LevelDB reads"),
        "{}",
        text(&out)
    );
    assert_reads(&dir, &expected, n);
    let out = run_bounded(&["upgrade", dir.to_str().unwrap(), "--format", "bloom"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run_bounded(&["verify", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!stdout(&out).contains("warning:"), "{}", text(&out));
}

#[test]
fn settings_are_checked_before_any_work_and_messages_say_what_happened() {
    let (_tmp, dir, _) = bloom_db(2000);
    let d = dir.to_str().unwrap();
    for (format, bits) in [
        ("compact", "40"),
        ("compact", "-1"),
        ("bloom", "0.5"),
        ("bloom", "-1"),
        ("bloom", "1001"),
    ] {
        let bits = format!("--bits-per-key={bits}");
        let out = run_bounded(&["upgrade", d, "--format", format, &bits]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            stdout(&out).is_empty(),
            "no pass over the database: {}",
            text(&out)
        );
        assert!(stderr(&out).contains("--bits-per-key"), "{}", text(&out));
        assert!(!stderr(&out).contains("another process"), "{}", text(&out));
    }
}

#[test]
fn a_standard_error_that_cannot_be_written_changes_only_the_message() {
    // Closed standard error (and output): the exit status is still the documented one.
    let mut cmd = command();
    cmd.args(["inspect", "/nonexistent/db"]);
    // SAFETY: closing a descriptor in the child before exec touches nothing of ours.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(2);
            Ok(())
        });
    }
    let out = run_within(cmd, LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn upgrade_rewrites_tables_without_filters_and_at_other_bits_per_key() {
    let tmp = tempfile::tempdir().unwrap();
    // Tables without filters (LevelDB 1.22), then some with Bloom filters at 10.
    let dir = tmp.path().join("db");
    let n = 20_000;
    let expected = old_unfiltered_db(&dir, n);
    {
        let db = Db::open(&dir, Some(BLOOM), true, false).unwrap();
        for i in n..n + 5000 {
            db.put(&key(i), b"later").unwrap();
        }
    }
    let total = &inspect_json(&dir)["total"];
    assert!(
        total["filter_policy"].as_str().unwrap().contains("none"),
        "the totals name both kinds: {total}"
    );
    let out = run_bounded(&[
        "upgrade",
        dir.to_str().unwrap(),
        "--format",
        "bloom",
        "--bits-per-key",
        "16",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json = inspect_json(&dir);
    for t in json["tables"].as_array().unwrap() {
        assert_eq!(t["filter_policy"], "leveldb.BuiltinBloomFilter2", "{t}");
        let bpk = t["bits_per_key"].as_f64().unwrap();
        assert!(bpk > 15.0 && bpk < 17.5, "16 bits per key: {t}");
    }
    assert_reads(&dir, &expected, n);
}

#[test]
fn empty_filters_print_no_nan() {
    // A table whose filter block holds only empty filters: no bits per key to show.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("empty-filters.ldb");
    let keys: Vec<Vec<u8>> = Vec::new();
    assert!(leveldb_oracle::write_table(&path, &keys, 10));
    let out = run_bounded(&["inspect", path.to_str().unwrap()]);
    assert!(!stdout(&out).contains("NaN"), "{}", text(&out));
    let json: Value = {
        let out = run_bounded(&["inspect", "--json", path.to_str().unwrap()]);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert!(json["total"]["bits_per_key"].is_null(), "{json}");
}

#[test]
fn a_lock_that_is_a_directory_fails_verify_as_it_fails_leveldb() {
    let (_tmp, dir, expected) = bloom_db(1000);
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    std::fs::create_dir(dir.join("LOCK")).unwrap();
    let stock = Db::open(&dir, Some(BLOOM), true, false).err();
    assert!(
        stock
            .as_ref()
            .is_some_and(|e| e.to_string().contains("Is a directory")),
        "stock LevelDB opens it: {stock:?}"
    );
    for args in [
        &["verify"][..],
        &["inspect"],
        &["upgrade", "--format", "compact"],
    ] {
        let out = run_bounded(&[args, &[dir.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            stderr(&out).contains("Is a directory"),
            "{args:?}: {}",
            text(&out)
        );
    }
    std::fs::remove_dir(dir.join("LOCK")).unwrap();
    assert_reads(&dir, &expected, 1000);
}
