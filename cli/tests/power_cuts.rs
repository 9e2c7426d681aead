//! The command cut by power: LevelDB's fault model (`db/fault_injection_test.cc`: data no
//! `fsync` made durable is lost, and so are directory entries no `fsync` of their directory
//! followed), made strict by a preloaded shim (`faults/power_cut.c`), at every operation of an
//! `upgrade`, of a put-back, and of an `upgrade --undo`, and once at exit; the same with each
//! sync failing with EIO. Each state a cut leaves is judged by stock LevelDB (every record,
//! paranoid reads) and by the commands that come next: `verify` calls nothing of the command's
//! own leftovers damage, and the next `upgrade` settles the database, or names the way on
//! (`--undo`, or running again), which then ends in the upgraded database, every record
//! intact.
//!
//! `LEVELDB_BLOOM_POWER_CUTS=sample` (the quick test run) cuts at a dozen of each sweep's
//! points, spread over it; unset, at every one.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::stock::{Records, stock_reads};
use common::*;

/// Where a run is cut.
#[derive(Clone, Copy, Debug)]
enum At {
    /// Just before the N-th operation (or at exit, if it makes fewer).
    Op(u64),
    /// At exit, after the N-th sync failed with EIO.
    FailedSync(u64),
}

/// A sweep: the command and the faults it runs with.
struct Sweep {
    args: Vec<String>,
    /// `LEVELDB_BLOOM_FAULT` for `faults/compaction_fault.c`, if any.
    fault: Option<&'static str>,
    /// `ordered`: directory entries durable as made (else only as synced).
    model: &'static str,
}

impl Sweep {
    fn command(&self, dir: &Path) -> Command {
        let mut cmd = command();
        cmd.args(
            self.args
                .iter()
                .map(|a| a.replace("{db}", dir.to_str().unwrap())),
        );
        let mut preload = Vec::new();
        if let Some(fault) = self.fault {
            preload.push(compaction_fault());
            cmd.env("LEVELDB_BLOOM_FAULT", fault)
                .env("LEVELDB_BLOOM_FAULT_DB", dir);
        }
        preload.push(power_cut());
        let preload: Vec<String> = preload.iter().map(|p| p.display().to_string()).collect();
        cmd.env("LD_PRELOAD", preload.join(":"))
            .env("POWER_CUT_DIR", dir)
            .env("POWER_CUT_MODEL", self.model);
        cmd
    }

    /// How many operations and syncs the command makes on a copy of `db`.
    fn count(&self, db: &Path, scratch: &Path) -> (u64, u64) {
        let dir = scratch.join("count");
        copy_tree(db, &dir);
        let counted = scratch.join("count.txt");
        let mut cmd = self.command(&dir);
        cmd.env("POWER_CUT_COUNT", &counted);
        run_within(cmd, LIMIT);
        let text = std::fs::read_to_string(&counted).expect("the shim counted");
        let mut numbers = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
        (numbers.next().unwrap(), numbers.next().unwrap())
    }

    /// The command on a copy of `db`, cut `at`: its output, and the directory as the cut
    /// left it.
    fn cut(&self, db: &Path, scratch: &Path, at: At) -> (Output, PathBuf) {
        let name = format!("{at:?}").replace(['(', ')'], "");
        let dir = scratch.join(format!("{name}-live"));
        let image = scratch.join(format!("{name}-cut"));
        copy_tree(db, &dir);
        let mut cmd = self.command(&dir);
        cmd.env("POWER_CUT_OUT", &image);
        match at {
            At::Op(n) => cmd.env("POWER_CUT_AT", n.to_string()),
            At::FailedSync(n) => cmd
                .env("POWER_CUT_AT", "exit")
                .env("POWER_CUT_FAIL_SYNC", n.to_string()),
        };
        let out = run_within(cmd, LIMIT);
        assert!(image.is_dir(), "{at:?}: no image: {}", text(&out));
        let _ = std::fs::remove_dir_all(&dir);
        (out, image)
    }
}

/// The points of a sweep over `1..=total`: every one, or a dozen spread over them.
fn points(total: u64) -> Vec<u64> {
    if std::env::var("LEVELDB_BLOOM_POWER_CUTS").as_deref() != Ok("sample") || total <= 12 {
        return (1..=total).collect();
    }
    let mut picked: Vec<u64> = (0..12).map(|i| 1 + i * (total - 1) / 11).collect();
    picked.dedup();
    picked
}

fn records(expected: &Expected) -> Records {
    expected.clone().into_iter().collect()
}

/// What stock LevelDB reads of `dir`, paranoid: it must be every record of `expected`.
fn assert_stock_reads_all(dir: &Path, expected: &Expected, what: &str) {
    let scratch = dir.with_extension("stock");
    let read = stock_reads(dir, &scratch, true);
    let _ = std::fs::remove_dir_all(&scratch);
    match read {
        Ok(read) if read == records(expected) => {}
        Ok(read) => panic!(
            "{what}: stock LevelDB reads {} records, not the {} written",
            read.len(),
            expected.len()
        ),
        Err(e) => panic!("{what}: stock LevelDB cannot read it: {e}"),
    }
}

fn way_back(dir: &Path) -> PathBuf {
    dir.join("leveldb-bloom-way-back")
}

/// The state a cut left, judged: `verify` finds no damage and stock LevelDB reads every record
/// (unless `loses`: a fault made the rewrite lose a record, which only the way back holds),
/// and the commands the messages name lead to the upgraded database, every record
/// intact, no way back left.
fn judge(image: &Path, expected: &Expected, loses: bool, what: &str) {
    let verify = run_bounded(&["verify", image.to_str().unwrap()]);
    if loses {
        // What the faulty rewrite wrote may be damage indeed (a deletion the version
        // lacks), but verify reads the state.
        assert!(
            matches!(verify.status.code(), Some(0 | 1)),
            "{what}: verify: {}",
            text(&verify)
        );
    } else {
        assert_eq!(
            verify.status.code(),
            Some(0),
            "{what}: verify calls the state a cut left damage: {}",
            text(&verify)
        );
        assert_stock_reads_all(image, expected, what);
    }
    let d = image.to_str().unwrap();
    let mut said = Vec::new();
    for step in 0..4 {
        let out = run_bounded(&["upgrade", d, "--format", "compact"]);
        said.push(text(&out));
        if out.status.code() == Some(0) {
            break;
        }
        let message = stderr(&out);
        assert!(
            out.status.code() == Some(1) && step < 3,
            "{what}: the next upgrade neither settles nor names the way on: {said:#?}"
        );
        if message.contains("--undo") {
            let undo = run_bounded(&["upgrade", "--undo", d]);
            said.push(text(&undo));
            assert_eq!(undo.status.code(), Some(0), "{what}: --undo: {said:#?}");
        } else {
            assert!(
                message.contains("run the upgrade again")
                    || message.contains("Run the upgrade again"),
                "{what}: the next upgrade names no way on: {said:#?}"
            );
        }
    }
    assert!(
        !way_back(image).exists(),
        "{what}: a way back is left after the upgrade: {said:#?}"
    );
    let json = inspect_json(image);
    assert!(
        json["tables"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["bloom_filters"] == 0),
        "{what}: not every table rewritten: {said:#?}"
    );
    assert_stock_reads_all(image, expected, &format!("{what}, after {said:#?}"));
}

/// Every point of `sweep` over the database `db` (holding `expected`), cut and judged. The
/// points run side by side, as many at once as the processor has threads: each is its own
/// copy of the database, and most of a point's time is the commands it starts waiting on
/// the disk.
fn sweep_all(sweep: &Sweep, db: &Path, expected: &Expected, loses: bool) {
    let scratch = tempfile::tempdir().unwrap();
    let (ops, syncs) = sweep.count(db, scratch.path());
    assert!(
        ops > 3 && syncs > 3,
        "{ops} operations, {syncs} syncs: the shim saw too few"
    );
    let cuts = points(ops).into_iter().map(At::Op);
    let failures = points(syncs).into_iter().map(At::FailedSync);
    let all: Vec<At> = cuts.chain(failures).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers.min(all.len()) {
            s.spawn(|| {
                while let Some(&at) = all.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (out, image) = sweep.cut(db, scratch.path(), at);
                    judge(
                        &image,
                        expected,
                        loses,
                        &format!(
                            "{:?} cut {at:?} of {ops} ({}): {}",
                            sweep.args,
                            sweep.model,
                            text(&out)
                        ),
                    );
                    let _ = std::fs::remove_dir_all(&image);
                }
            });
        }
    });
    println!(
        "{:?} ({}{}): {} states judged ({ops} operations, {syncs} syncs)",
        sweep.args,
        sweep.model,
        sweep
            .fault
            .map_or(String::new(), |f| format!(", fault {f}")),
        all.len()
    );
}

fn upgrade_args() -> Vec<String> {
    ["upgrade", "{db}", "--format", "compact"]
        .map(String::from)
        .to_vec()
}

#[test]
fn an_upgrade_cut_by_power_anywhere_settles_and_loses_nothing() {
    let (_tmp, db, expected) = bloom_db(3000);
    for model in ["synced", "ordered"] {
        let sweep = Sweep {
            args: upgrade_args(),
            fault: None,
            model,
        };
        sweep_all(&sweep, &db, &expected, false);
    }
}

#[test]
fn a_put_back_cut_by_power_anywhere_settles_and_loses_nothing() {
    // The rewrite loses a record (faults/compaction_fault.c), so the upgrade puts the
    // database back; cut anywhere in that, the next commands bring every record back.
    let (_tmp, db, expected) = bloom_db(3000);
    let sweep = Sweep {
        args: upgrade_args(),
        fault: Some("lose"),
        model: "synced",
    };
    sweep_all(&sweep, &db, &expected, true);
}

#[test]
fn an_undo_cut_by_power_anywhere_settles_and_loses_nothing() {
    // A way back left by an upgrade killed after its rewrite, then put back by --undo, cut
    // anywhere.
    let (tmp, db, expected) = bloom_db(3000);
    let killed = tmp.path().join("killed");
    copy_tree(&db, &killed);
    kill_upgrade_after_rewrite(&killed);
    assert!(way_back(&killed).is_dir());
    let sweep = Sweep {
        args: ["upgrade", "--undo", "{db}"].map(String::from).to_vec(),
        fault: None,
        model: "synced",
    };
    sweep_all(&sweep, &killed, &expected, false);
}
