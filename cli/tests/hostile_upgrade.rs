//! `upgrade` and `upgrade --undo` attacked as an operator (or the machine) can attack them,
//! in cases no other test names. Each test says what an operator loses where it fails.
//! Judged by stock LevelDB (paranoid checks, every record read back against what was
//! written) and by what the commands say.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::stock::{Records, stock_reads};
use common::*;
use leveldb_bloom_cli::leveldb::Db;

const WAY_BACK: &str = "leveldb-bloom-way-back";

fn records(expected: &Expected) -> Records {
    expected.clone().into_iter().collect()
}

/// What stock LevelDB (paranoid) reads of `dir`, against `expected`: `Ok` only if every
/// record reads as written.
fn stock_reads_all(dir: &Path, expected: &Expected) -> Result<(), String> {
    let scratch = dir.with_extension("stock");
    let read = stock_reads(dir, &scratch, true);
    let _ = std::fs::remove_dir_all(&scratch);
    match read {
        Ok(read) if read == records(expected) => Ok(()),
        Ok(read) => Err(format!(
            "stock LevelDB reads {} records, not the {} written",
            read.len(),
            expected.len()
        )),
        Err(e) => Err(format!("stock LevelDB cannot read it: {e}")),
    }
}

/// An upgrade of `dir` killed right after LevelDB's rewrite (`faults/compaction_fault.c`):
/// the way back is left, with its record of what LevelDB read before.
fn kill_after_rewrite(dir: &Path) {
    kill_upgrade_after_rewrite(dir);
    assert!(
        dir.join(WAY_BACK).join("made").exists(),
        "a way back is left"
    );
}

/// A database whose records all sit in its write-ahead log: written by stock LevelDB and
/// closed before any flush, as a program that writes a little and exits leaves it.
fn wal_db(dir: &Path, n: u64) -> Expected {
    let mut expected = Expected::new();
    let db = Db::open(dir, Some(BLOOM), true, true).expect("create the database");
    for i in 0..n {
        let value = format!("value-{i}").into_bytes();
        db.put(&key(i), &value).unwrap();
        expected.insert(key(i), value);
    }
    drop(db);
    expected
}

/// `upgrade --undo` with part of the way back gone (an operator short of disk space deletes
/// the old table from `kept/`, which the docs say holds the old tables' space; a backup tool
/// or a clean-up script skips a file). `--undo` restores what is there, then deletes every
/// file of the database that is not kept, the upgraded tables and MANIFEST included, and
/// says "put back: the database is as it was". What the operator loses: every record (stock
/// LevelDB refuses the database: "1 missing files", "CURRENT points to a non-existent file",
/// or no CURRENT at all), where the database LevelDB had rewritten read every record. The
/// undo must check that the kept files make a database before it removes anything.
#[test]
fn an_undo_whose_way_back_lost_a_file_never_destroys_the_database() {
    let (tmp, db, expected) = bloom_db(3000);
    kill_after_rewrite(&db);
    // The rewritten database reads whole, before any undo.
    stock_reads_all(&db, &expected).expect("the rewritten database reads whole");
    let kept = db.join(WAY_BACK).join("kept");
    let mut names: Vec<String> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let table = names.iter().find(|n| n.ends_with(".ldb")).cloned().unwrap();
    let manifest = names
        .iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .cloned()
        .unwrap();
    let mut failures = Vec::new();
    for gone in [table, manifest, "CURRENT".to_owned()] {
        let dir = tmp.path().join(format!("without-{gone}"));
        copy_tree(&db, &dir);
        std::fs::remove_file(dir.join(WAY_BACK).join("kept").join(&gone)).unwrap();
        let undo = run_bounded(&["upgrade", "--undo", dir.to_str().unwrap()]);
        if undo.status.success() {
            failures.push(format!(
                "kept/{gone} removed: `upgrade --undo` said it put the database back: {}",
                text(&undo)
            ));
        }
        if let Err(e) = stock_reads_all(&dir, &expected) {
            failures.push(format!(
                "kept/{gone} removed, then `upgrade --undo`: {e}; the command said: {}",
                text(&undo)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The power-cut shim (`faults/power_cut.c`) around the command `args` on `dir`, cut before
/// operation `at` (or at exit), directory entries durable in the order made ("ordered", as
/// ext4's journal keeps them: what a kill or a power cut on such a file system leaves).
fn cut(args: &[&str], dir: &Path, image: &Path, at: u64) -> Output {
    let mut cmd = under_power_cut(args, dir, Some("ordered"));
    cmd.env("POWER_CUT_OUT", image)
        .env("POWER_CUT_AT", at.to_string());
    run_within(cmd, LIMIT)
}

/// The command `args` (`{db}` in them is `dir`) under the power-cut shim, watching `dir`,
/// with the shim's `model` where one is given.
fn under_power_cut(args: &[&str], dir: &Path, model: Option<&str>) -> std::process::Command {
    let mut cmd = command();
    cmd.args(
        args.iter()
            .map(|a| a.replace("{db}", dir.to_str().unwrap())),
    )
    .env("LD_PRELOAD", power_cut())
    .env("POWER_CUT_DIR", dir);
    if let Some(model) = model {
        cmd.env("POWER_CUT_MODEL", model);
    }
    cmd
}

/// How many operations and syncs the command (`args`, `{db}` in them) makes on a copy of
/// `db`, under the shim's `model` where one is given.
fn counts(args: &[&str], db: &Path, scratch: &Path, model: Option<&str>) -> (u64, u64) {
    let dir = scratch.join("count");
    copy_tree(db, &dir);
    let counted = scratch.join("count.txt");
    let mut cmd = under_power_cut(args, &dir, model);
    cmd.env("POWER_CUT_COUNT", &counted);
    run_within(cmd, LIMIT);
    let text = std::fs::read_to_string(&counted).expect("the shim counted");
    let mut numbers = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

/// A put-back (`upgrade --undo` of an upgrade killed after its rewrite) cut anywhere, on a
/// database whose records were in its write-ahead log when the upgrade began (a program
/// that wrote and exited; `power_cuts.rs` only cuts databases whose records are all in
/// tables). Between restoring `CURRENT` and removing LevelDB's new tables, the database is
/// the old version plus the rewrite's tables, one of which holds the first and last records
/// the upgrade wrote again (same values, newer sequence numbers). Stock LevelDB reads every
/// record there, and the next `upgrade` finishes the put-back, so `verify` must not call it
/// damage: it once looked for what the version holds of a key in its tables only, never in
/// its live log, and said "holds 1 record the version lacks ... run LevelDB's RepairDB".
#[test]
fn a_put_back_cut_anywhere_on_a_database_with_its_records_in_the_log_is_not_called_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let expected = wal_db(&db, 2000);
    kill_after_rewrite(&db);
    let args = ["upgrade", "--undo", "{db}"];
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let (ops, _) = counts(&args, &db, &scratch, Some("ordered"));
    assert!(ops > 3, "{ops} operations: the shim saw too few");
    let mut failures = Vec::new();
    for at in 1..=ops + 1 {
        let live = scratch.join(format!("{at}-live"));
        let image = scratch.join(format!("{at}-cut"));
        copy_tree(&db, &live);
        let out = cut(&args, &live, &image, at);
        assert!(image.is_dir(), "cut {at}: no image: {}", text(&out));
        if let Err(e) = stock_reads_all(&image, &expected) {
            failures.push(format!("cut {at} of {ops}: {e}"));
        }
        let verify = run_bounded(&["verify", image.to_str().unwrap()]);
        if verify.status.code() != Some(0) {
            failures.push(format!(
                "cut {at} of {ops}: stock LevelDB reads every record, but verify: {}",
                text(&verify)
            ));
        }
        let _ = std::fs::remove_dir_all(&live);
        let _ = std::fs::remove_dir_all(&image);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// An `fsync` of the database directory failing (EIO) after the way back was renamed away
/// for removal: the upgrade is proven, but the command says "its way back could not be
/// removed ...; remove <db>/leveldb-bloom-way-back to free the old tables' space" — a
/// folder that no longer exists under that name (it is `leveldb-bloom-way-back.discarded`,
/// or already gone), and it prints no "after:" summary and exits 2. What an operator loses:
/// a true message: removing the folder named frees nothing, and `verify` says nothing of
/// the `.discarded` folder holding the old tables' space.
#[test]
fn a_failed_directory_sync_while_the_way_back_goes_names_a_folder_that_is_there() {
    let (tmp, db, _expected) = bloom_db(3000);
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let args = ["upgrade", "{db}", "--format", "compact"];
    // How many syncs the upgrade makes.
    let (_, syncs) = counts(&args, &db, &scratch, None);
    let mut failures = Vec::new();
    let mut said = 0;
    for fail in syncs.saturating_sub(3)..=syncs {
        let live = scratch.join(format!("{fail}-live"));
        let image = scratch.join(format!("{fail}-cut"));
        copy_tree(&db, &live);
        let mut cmd = under_power_cut(&args, &live, None);
        cmd.env("POWER_CUT_OUT", &image)
            .env("POWER_CUT_AT", "exit")
            .env("POWER_CUT_FAIL_SYNC", fail.to_string());
        let out = run_within(cmd, LIMIT);
        let message = stderr(&out);
        if let Some(named) = message
            .split("; remove ")
            .nth(1)
            .and_then(|rest| rest.split(" to free").next())
        {
            said += 1;
            // What the operator is told to remove must be what holds the space, in the
            // directory the operator looks at (the live one, not the power-cut image).
            let named = PathBuf::from(named);
            if !named.exists() {
                failures.push(format!(
                    "sync {fail} of {syncs} failed: the command names {} to remove, which is \
                     not there (the directory holds {:?}): {}",
                    named.display(),
                    std::fs::read_dir(&live)
                        .unwrap()
                        .map(|e| e.unwrap().file_name())
                        .collect::<Vec<_>>(),
                    text(&out)
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&live);
        let _ = std::fs::remove_dir_all(&image);
    }
    assert!(said > 0, "no failed sync reached the way back's removal");
    assert!(failures.is_empty(), "{failures:#?}");
}
