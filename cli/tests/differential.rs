//! `verify` and `upgrade` against stock LevelDB on random databases, randomly damaged.
//!
//! Each case: LevelDB 1.23 writes a database (random puts, overwrites, deletions, empty and
//! 0x00/0xff keys, values up to 5 KB, snapshots held across compactions, reopened with
//! records left in its log; random write buffer, block size, restart interval, compression
//! and filters), and what it reads is recorded. Then the files are damaged as disks, crashes
//! and tools damage them: bytes flipped, zeroed or cut off in a table, a log or the
//! MANIFEST; garbage appended; a MANIFEST field (next file number, last sequence number, log
//! number) set with its checksum recomputed; a table removed, renamed to `.sst`, or copied
//! under another number; `CURRENT` cut or pointed elsewhere. Two oracles, both stock LevelDB:
//!
//! - `verify` says ok only if stock LevelDB opens a copy with paranoid checks and reads
//!   every record as it read it before the damage; or, where the newest log was cut short
//!   or zeroed to its end (what a crash leaves) or `verify` warned that LevelDB skips log
//!   records, reads without an error.
//! - `upgrade` exits 0 only if stock LevelDB reads the same records after it as before it;
//!   and when it refuses, no file changed. A third of the upgrades are cut by power at a
//!   random operation (`faults/power_cut.c`): what the cut leaves, and what the next upgrade
//!   (and the `--undo` it names) leaves, must read as before.
//!
//! The run lasts `LEVELDB_BLOOM_DIFFERENTIAL_SECONDS` (default 20), from the seed in
//! `LEVELDB_BLOOM_DIFFERENTIAL_SEED` (default: the time); a disagreement fails with the
//! case's seed, which reproduces it alone. `scripts/test --all` runs it for two minutes.

mod common;

use std::path::Path;
use std::ptr;
use std::time::{Duration, Instant};

use common::stock::{Options, Records, open, records_of, stock_reads, take_error};
use common::*;
use leveldb_sys::*;

fn key(rng: &mut fastrand::Rng) -> Vec<u8> {
    match rng.u8(0..20) {
        0 => Vec::new(),
        1 => vec![0; rng.usize(1..4)],
        2 => vec![0xff; rng.usize(1..4)],
        _ => format!("key{:06}", rng.u32(0..3000)).into_bytes(),
    }
}

/// A database LevelDB writes at random into `dir`; what it reads afterwards.
fn random_database(dir: &Path, rng: &mut fastrand::Rng) -> Records {
    let options = Options::new(false, true);
    // SAFETY: live options.
    unsafe {
        leveldb_options_set_write_buffer_size(options.options, rng.usize(4 << 10..1 << 20));
        leveldb_options_set_block_size(options.options, rng.usize(256..16 << 10));
        leveldb_options_set_block_restart_interval(options.options, rng.i32(1..32));
        leveldb_options_set_compression(options.options, rng.i32(0..2));
        if rng.bool() {
            leveldb_options_set_filter_policy(options.options, ptr::null_mut());
        }
    }
    let mut db = open(dir, &options).unwrap();
    let mut snapshot: *const leveldb_snapshot_t = ptr::null();
    // SAFETY: every handle is live where used: the database between open and close, the
    // write options and the snapshot until released; the slices outlive each call.
    unsafe {
        let write = leveldb_writeoptions_create();
        for _ in 0..rng.usize(50..3000) {
            let mut err = ptr::null_mut();
            match rng.u8(0..100) {
                0..70 => {
                    let k = key(rng);
                    let len = if rng.u8(0..50) == 0 {
                        5000
                    } else {
                        rng.usize(0..300)
                    };
                    let value = vec![rng.u8(..); len];
                    leveldb_put(
                        db,
                        write,
                        k.as_ptr().cast(),
                        k.len(),
                        value.as_ptr().cast(),
                        len,
                        &mut err,
                    );
                }
                70..90 => {
                    let k = key(rng);
                    leveldb_delete(db, write, k.as_ptr().cast(), k.len(), &mut err);
                }
                90..93 => leveldb_compact_range(db, ptr::null(), 0, ptr::null(), 0),
                93..96 if snapshot.is_null() => snapshot = leveldb_create_snapshot(db),
                93..96 => {
                    leveldb_release_snapshot(db, snapshot);
                    snapshot = ptr::null();
                }
                _ => {
                    if !snapshot.is_null() {
                        leveldb_release_snapshot(db, snapshot);
                        snapshot = ptr::null();
                    }
                    leveldb_close(db);
                    db = open(dir, &options).unwrap();
                }
            }
            take_error(err).unwrap();
        }
        if !snapshot.is_null() {
            leveldb_release_snapshot(db, snapshot);
        }
        leveldb_writeoptions_destroy(write);
        let records = records_of(db).unwrap();
        leveldb_close(db);
        records
    }
}

fn files_of(dir: &Path, pick: impl Fn(&str) -> bool) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && pick(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    files.sort();
    files
}

/// Damages a byte range of `file`: flipped, zeroed, cut off or garbage appended.
fn damage_bytes(file: &Path, rng: &mut fastrand::Rng) -> String {
    let mut bytes = std::fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    if bytes.is_empty() {
        return format!("{name}: empty, left");
    }
    let at = rng.usize(..bytes.len());
    match rng.u8(0..4) {
        0 => {
            bytes[at] ^= 1 << rng.u8(0..8);
            std::fs::write(file, bytes).unwrap();
            format!("{name}: bit flipped at {at}")
        }
        1 => {
            let end = (at + rng.usize(1..4096)).min(bytes.len());
            let to_the_end = if end == bytes.len() {
                " (to the end)"
            } else {
                ""
            };
            bytes[at..end].fill(0);
            std::fs::write(file, bytes).unwrap();
            format!("{name}: zeroed {at}..{end}{to_the_end}")
        }
        2 => {
            bytes.truncate(at);
            std::fs::write(file, bytes).unwrap();
            format!("{name}: cut at {at}")
        }
        _ => {
            let garbage: Vec<u8> = (0..rng.usize(1..100)).map(|_| rng.u8(..)).collect();
            bytes.extend_from_slice(&garbage);
            std::fs::write(file, bytes).unwrap();
            format!("{name}: {} bytes appended", garbage.len())
        }
    }
}

/// Damages the database in `dir` one way, at random; what was done.
fn damage(dir: &Path, rng: &mut fastrand::Rng) -> String {
    let tables = files_of(dir, |n| n.ends_with(".ldb") || n.ends_with(".sst"));
    let logs = files_of(dir, |n| n.ends_with(".log"));
    let manifest = dir.join(
        std::fs::read_to_string(dir.join("CURRENT"))
            .unwrap()
            .trim_end(),
    );
    match rng.u8(0..12) {
        0..3 if !tables.is_empty() => damage_bytes(&tables[rng.usize(..tables.len())], rng),
        3..5 if !logs.is_empty() => damage_bytes(&logs[rng.usize(..logs.len())], rng),
        5 => damage_bytes(&manifest, rng),
        6 => {
            let (tag, name, value) = match rng.u8(0..3) {
                0 => (3, "next file number", rng.u64(0..20)),
                1 => (4, "last sequence number", (1 << 56) - rng.u64(1..10_000)),
                _ => (2, "log number", rng.u64(0..20)),
            };
            append_edit(dir, field_edit(tag, value));
            format!("MANIFEST: {name} set to {value}")
        }
        7 if !tables.is_empty() => {
            let table = &tables[rng.usize(..tables.len())];
            std::fs::remove_file(table).unwrap();
            format!("{} removed", table.display())
        }
        8 if !tables.is_empty() => {
            let table = &tables[rng.usize(..tables.len())];
            std::fs::rename(table, table.with_extension("sst")).unwrap();
            format!("{} renamed .sst", table.display())
        }
        9 if !tables.is_empty() => {
            let table = &tables[rng.usize(..tables.len())];
            let other = dir.join(format!("{:06}.ldb", rng.u64(1..40)));
            let _ = std::fs::copy(table, &other);
            format!("{} copied to {}", table.display(), other.display())
        }
        10 => {
            let current = std::fs::read(dir.join("CURRENT")).unwrap();
            let cut = rng.usize(..current.len());
            std::fs::write(dir.join("CURRENT"), &current[..cut]).unwrap();
            format!("CURRENT cut at {cut}")
        }
        _ => "nothing".into(),
    }
}

/// One case from `seed`: the disagreements it finds.
fn case(seed: u64, scratch: &Path) -> Vec<String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    let original = scratch.join("original");
    let written = random_database(&original, &mut rng);
    let damaged = scratch.join("damaged");
    copy_db(&original, &damaged);
    let what = damage(&damaged, &mut rng);
    let mut found = Vec::new();
    let d = damaged.to_str().unwrap();

    // The newest log cut short, or zeroed to its end, is what a crash leaves (a file whose
    // length reached the disk before its data): the writes there are not in the files
    // (older values and deleted keys read again), and LevelDB (and verify) read the rest
    // without complaint.
    let newest_log = files_of(&damaged, |n| n.ends_with(".log")).pop();
    let crash = newest_log.is_some_and(|log| {
        let name = log.file_name().unwrap().to_string_lossy().into_owned();
        what.starts_with(&format!("{name}: cut at"))
            || (what.starts_with(&format!("{name}: zeroed")) && what.ends_with("(to the end)"))
    });
    let verify = run_bounded(&["verify", d]);
    if verify.status.code() == Some(0) {
        let skips = stdout(&verify).contains("LevelDB's recovery skips");
        match stock_reads(&damaged, &scratch.join("read"), true) {
            // Skipped or cut-off writes: older values and deleted keys read again.
            Ok(read) if read == written || crash || skips => {}
            Ok(read) => found.push(format!(
                "{what}: verify says ok, and stock LevelDB reads {} records where it wrote {} \
                 (verify: {})",
                read.len(),
                written.len(),
                stdout(&verify).trim_end()
            )),
            Err(e) => found.push(format!(
                "{what}: verify says ok, and stock LevelDB with paranoid checks says: {e}"
            )),
        }
    } else if !matches!(verify.status.code(), Some(1 | 2)) {
        found.push(format!("{what}: verify: {}", text(&verify)));
    }

    let before = stock_reads(&damaged, &scratch.join("read"), false);
    let files = data_files(&damaged);
    let format = if rng.bool() { "compact" } else { "bloom" };
    if rng.u8(0..3) == 0 {
        found.extend(cut_by_power(
            &damaged, &before, format, scratch, &mut rng, &what,
        ));
        return found;
    }
    let upgrade = run_bounded(&["upgrade", d, "--format", format]);
    match upgrade.status.code() {
        Some(0) => {
            let after = stock_reads(&damaged, &scratch.join("read"), false);
            if after != before || before.is_err() {
                found.push(format!(
                    "{what}: upgrade exits 0, and stock LevelDB read {:?} records before and \
                     {:?} after",
                    before.map(|r| r.len()),
                    after.map(|r| r.len())
                ));
            }
        }
        Some(1 | 2) => {
            let partial = stdout(&upgrade).contains("not rewritten (they keep");
            if !partial && data_files(&damaged) != files {
                found.push(format!(
                    "{what}: upgrade refused, and changed files: {}",
                    text(&upgrade)
                ));
            }
        }
        _ => found.push(format!("{what}: upgrade: {}", text(&upgrade))),
    }
    found
}

/// The upgrade of `damaged` cut by power at a random operation (`faults/power_cut.c`, either
/// model, a sync failing now and then): what the cut leaves, and what the commands the next
/// upgrade names leave, must read as stock LevelDB read `before`.
fn cut_by_power(
    damaged: &Path,
    before: &Result<Records, String>,
    format: &str,
    scratch: &Path,
    rng: &mut fastrand::Rng,
    what: &str,
) -> Vec<String> {
    let mut found = Vec::new();
    let image = scratch.join("cut");
    let at = rng.u64(1..80);
    let model = if rng.bool() { "synced" } else { "ordered" };
    let mut cmd = command();
    cmd.args(["upgrade", damaged.to_str().unwrap(), "--format", format])
        .env("LD_PRELOAD", power_cut())
        .env("POWER_CUT_DIR", damaged)
        .env("POWER_CUT_OUT", &image)
        .env("POWER_CUT_AT", at.to_string())
        .env("POWER_CUT_MODEL", model);
    let failing = (rng.u8(0..4) == 0).then(|| rng.u64(1..40));
    if let Some(sync) = failing {
        cmd.env("POWER_CUT_FAIL_SYNC", sync.to_string());
    }
    let how = format!("{what}; upgrade cut at operation {at} ({model}, sync {failing:?} failing)");
    let cut = run_within(cmd, LIMIT);
    if !image.is_dir() {
        return vec![format!("{how}: no image: {}", text(&cut))];
    }
    let Ok(before) = before else {
        return found;
    };
    let reads = |dir: &Path| stock_reads(dir, &scratch.join("read"), false);
    let i = image.to_str().unwrap();
    match reads(&image) {
        Ok(read) if read == *before => {}
        read => found.push(format!(
            "{how}: stock LevelDB read {} records before, and {:?} after the cut ({})",
            before.len(),
            read.map(|r| r.len()),
            text(&cut)
        )),
    }
    let next = run_bounded(&["upgrade", i, "--format", format]);
    if stderr(&next).contains("--undo") {
        run_bounded(&["upgrade", "--undo", i]);
    }
    match reads(&image) {
        Ok(read) if read == *before => {}
        read => found.push(format!(
            "{how}: stock LevelDB read {} records before, and {:?} after the next upgrade \
             ({})",
            before.len(),
            read.map(|r| r.len()),
            text(&next)
        )),
    }
    found
}

#[test]
#[ignore = "a timed differential run (scripts/test --all runs it for two minutes)"]
fn verify_and_upgrade_agree_with_stock_leveldb_on_damaged_databases() {
    let seconds = std::env::var("LEVELDB_BLOOM_DIFFERENTIAL_SECONDS")
        .map_or(20, |s| s.parse().expect("a number of seconds"));
    let first = std::env::var("LEVELDB_BLOOM_DIFFERENTIAL_SEED").map_or_else(
        |_| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        },
        |s| s.parse().expect("a seed"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let mut cases = 0u64;
    let mut disagreements = Vec::new();
    while start.elapsed() < Duration::from_secs(seconds) || cases == 0 {
        let seed = first.wrapping_add(cases);
        for found in case(seed, tmp.path()) {
            println!("seed {seed}: {found}");
            disagreements.push(format!("seed {seed}: {found}"));
        }
        cases += 1;
        if disagreements.len() >= 5 {
            break;
        }
    }
    println!(
        "{cases} cases from seed {first} in {:?}: {} disagreements",
        start.elapsed(),
        disagreements.len()
    );
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
