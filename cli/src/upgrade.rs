//! `upgrade`: LevelDB itself rewrites every table of a database with a new filter policy,
//! and the result is proven (LevelDB reads the same records after it as before) or the
//! database is put back exactly as it was ([`WayBack`]).

use std::fmt::Write as _;
use std::path::Path;

use crate::commands::{Analysis, Failure, OK, PROBLEM, analyze_all, emit, lock, lock_failure};
use crate::files::shown;
use crate::leveldb::{Db, builds};
use crate::lock::DatabaseLock;
use crate::manifest;
use crate::report::{self, TableReport};
use crate::way_back::{self, WayBack};
use leveldb_bloom::AnyPolicy;

/// `upgrade PATH --format F [--bits-per-key N]`: LevelDB rewrites every table with the
/// new policy. Its own compaction writes the new tables and then the MANIFEST that names
/// them, so the database stays readable whatever fails on the way. The upgrade proves its
/// own result: what LevelDB reads after it (reopening the database) must be what it read
/// before, record for record, or the database is put back exactly as it was
/// ([`WayBack`]). Succeeds only when, besides, every table of the current version carries
/// the new filters and LevelDB reported no error.
pub fn upgrade(path: &Path, policy: AnyPolicy) -> Result<u8, Failure> {
    if !path.is_dir() || !manifest::is_database(path) {
        return Err(Failure::error(format!(
            "{}: not a LevelDB database directory (no CURRENT file)",
            shown(path)
        )));
    }
    // The write lock first: a database in use, or one that cannot be written, is said at
    // once, before any table is read.
    let held = lock(path, true)?;
    if let Some(left) = WayBack::found(path).filter(|w| w.putting_back() && w.whole()) {
        // Putting back had begun: it is finished before the database is read, since it is
        // half one version and half the other until then.
        left.put_back()
            .map_err(|e| Failure::error(format!("{}: {e}", shown(left.folder()))))?;
        return Err(Failure::damaged(format!(
            "{}: an earlier upgrade could not prove its result and was putting the database \
             back; that is finished, and the database is as it was before that upgrade. \
             Nothing rewritten: run the upgrade again",
            shown(path)
        )));
    }
    let mut analysis = rewritable(path)?;
    if let Some(left) = WayBack::found(path) {
        // Only a database the checks pass is opened to settle it; LevelDB's open changes
        // its files, which are read again.
        settle(path, &held, &left, policy)?;
        analysis = rewritable(path)?;
    }
    let before = analysis.tables.as_slice();
    let snappy = before.iter().any(|t| t.compressed_blocks > 0);
    emit(&report::summary("before", &report::total(before)))?;
    let way_back = WayBack::make(path, analysis.next_file).map_err(|e| {
        Failure::error(format!(
            "{}: cannot keep the way back in {} ({e}); nothing rewritten",
            shown(path),
            shown(&path.join(way_back::FOLDER))
        ))
    })?;
    let rewritten = (|| {
        let db = Db::open(path, Some(policy), snappy, false).map_err(|e| {
            if e.starts_with("Corruption:") {
                Failure::damaged(corruption_at_open(path, &e))
            } else {
                Failure::error(open_failure(path, &e))
            }
        })?;
        let read = db.digest().map_err(|e| {
            Failure::damaged(format!(
                "{}: LevelDB cannot read every record ({e}); run `leveldb-bloom verify`",
                shown(path)
            ))
        })?;
        way_back.record_before(&read).map_err(|e| {
            Failure::error(format!(
                "{}: cannot record what LevelDB read ({e})",
                shown(way_back.folder())
            ))
        })?;
        Ok((read, rewrite_all(&db, before).err()))
    })();
    // Closing the database released the process's lock: take it back before any file is
    // touched again.
    held.retake().map_err(|e| lock_failure(path, true, e))?;
    let (read_before, leveldb_error) = match rewritten {
        Ok(done) => done,
        Err(failure) => return Err(put_back(path, &way_back, failure)),
    };
    let read_after = Db::open(path, Some(policy), snappy, false).and_then(|db| db.digest());
    held.retake().map_err(|e| lock_failure(path, true, e))?;
    if read_after.as_ref() != Ok(&read_before) {
        let after = match &read_after {
            Ok(read) => format!("{read} after it"),
            Err(e) => format!("cannot read it after it ({e})"),
        };
        return Err(put_back(
            path,
            &way_back,
            Failure::damaged(format!(
                "{}: LevelDB read {read_before} before the rewrite and {after}: the upgrade \
                 is not proven",
                shown(path)
            )),
        ));
    }
    way_back.discard().map_err(|e| {
        Failure::error(format!(
            "{}: the upgrade is proven, but its way back could not be removed ({e}); remove \
             {} to free the old tables' space",
            shown(path),
            shown(way_back.folder())
        ))
    })?;
    let after = analyze_all(path, true, None)?.tables;
    emit(&report::summary("after", &report::total(&after)))?;
    let stale: Vec<&str> = after
        .iter()
        .filter(|t| !t.problems.is_empty() || !carries(t, policy))
        .map(|t| t.file.as_str())
        .collect();
    if stale.is_empty() && leveldb_error.is_none() {
        return Ok(OK);
    }
    let mut out = String::new();
    if !stale.is_empty() {
        let _ = writeln!(
            out,
            "not rewritten (they keep their old filters): {}",
            stale.join(", ")
        );
    }
    if let Some(e) = &leveldb_error {
        let _ = writeln!(out, "LevelDB reported: {e}");
    }
    let full = leveldb_error.as_deref().is_some_and(disk_full);
    let _ = writeln!(
        out,
        "the upgrade did not finish, and every record reads as before; {}",
        if full {
            "the disk is full: LevelDB may need free space to open the database again (it \
             rewrites its MANIFEST at open), and LevelDB's partial tables may be taking some; \
             free some space, then run the upgrade again: it finishes the job"
        } else {
            "running the upgrade again finishes the job"
        }
    );
    emit(&out)?;
    Ok(PROBLEM)
}

/// The database at `path` read in full, if `upgrade` may hand it to LevelDB: no damage, no
/// state LevelDB's recovery turns into loss, no intact log records LevelDB would skip.
fn rewritable(path: &Path) -> Result<Analysis, Failure> {
    let analysis = analyze_all(path, true, None)?;
    if !analysis.hazards.is_empty() {
        return Err(Failure::damaged(format!(
            "{}: damaged: {}; not rewritten",
            shown(path),
            analysis.hazards.join("; ")
        )));
    }
    if let Some(line) = analysis.skipped_lines().next() {
        return Err(Failure::damaged(format!(
            "{}: not rewritten: opening it, LevelDB would make a loss in its log final \
             ({line})",
            shown(path)
        )));
    }
    let damaged: Vec<&str> = analysis
        .tables
        .iter()
        .filter(|t| !t.problems.is_empty())
        .map(|t| t.file.as_str())
        .chain(analysis.damaged_logs().map(|(log, _)| log.file.as_str()))
        .chain(analysis.lost_at_open().map(|(file, _)| file))
        .collect();
    if !damaged.is_empty() {
        return Err(Failure::damaged(format!(
            "{}: damaged ({}: run `leveldb-bloom verify`); not rewritten",
            shown(path),
            damaged.join(", ")
        )));
    }
    Ok(analysis)
}

/// Puts the database back after `failure`, and says so with it.
fn put_back(path: &Path, way_back: &WayBack, failure: Failure) -> Failure {
    match way_back.put_back() {
        Ok(()) => Failure {
            message: format!(
                "{}; the database is put back exactly as it was{}",
                failure.message,
                if disk_full(&failure.message) {
                    ": free some space, then run the upgrade again"
                } else {
                    ""
                }
            ),
            ..failure
        },
        Err(e) => Failure::error(format!(
            "{}; putting the database back failed ({e}): {} holds its files as they were, \
             and `leveldb-bloom upgrade --undo {}` puts them back",
            failure.message,
            shown(way_back.folder()),
            shown(path)
        )),
    }
}

/// Whether a LevelDB message says the disk is full.
fn disk_full(message: &str) -> bool {
    message.contains("No space left") || message.contains("Disk quota")
}

/// Settles the way back an earlier, interrupted upgrade left (one that was not putting the
/// database back): removes it if LevelDB had not begun rewriting or reads what it read
/// before, and otherwise stops, touching nothing.
fn settle(
    path: &Path,
    held: &DatabaseLock,
    left: &WayBack,
    policy: AnyPolicy,
) -> Result<(), Failure> {
    let folder = shown(left.folder());
    let cannot = |e: std::io::Error| Failure::error(format!("{folder}: {e}"));
    let Some(before) = left.before() else {
        // LevelDB had not begun rewriting: the database is what LevelDB's open left.
        return left.discard().map_err(cannot);
    };
    let now = Db::open(path, Some(policy), true, false).and_then(|db| db.digest());
    held.retake().map_err(|e| lock_failure(path, true, e))?;
    match now {
        Ok(now) if now == before => left.discard().map_err(cannot),
        now => Err(Failure::damaged(format!(
            "{}: an earlier upgrade did not finish, and LevelDB now reads {} where it read \
             {before} before that upgrade: a program wrote to the database since, or the \
             upgrade lost records. Nothing rewritten. {folder} holds the database's files as \
             they were before that upgrade: to keep the database as it is, remove that \
             folder; to put those files back, run `leveldb-bloom upgrade --undo {}`",
            shown(path),
            now.map_or_else(|e| format!("nothing ({e})"), |now| now.to_string()),
            shown(path)
        ))),
    }
}

/// `upgrade --undo PATH`: puts back the files an interrupted upgrade kept.
pub fn undo(path: &Path) -> Result<u8, Failure> {
    if !path.is_dir() || !manifest::is_database(path) {
        return Err(Failure::error(format!(
            "{}: not a LevelDB database directory (no CURRENT file)",
            shown(path)
        )));
    }
    let _held = lock(path, true)?;
    let Some(left) = WayBack::found(path) else {
        return Err(Failure::error(format!(
            "{}: no upgrade left a way back here; nothing to put back",
            shown(path)
        )));
    };
    if !left.whole() {
        return Err(Failure::error(format!(
            "{}: the upgrade that left it stopped before LevelDB opened the database, while \
             making it; nothing to put back (the next upgrade removes it)",
            shown(left.folder())
        )));
    }
    left.put_back()
        .map_err(|e| Failure::error(format!("{}: {e}", shown(left.folder()))))?;
    emit("put back: the database is as it was before the upgrade that did not finish\n")?;
    Ok(OK)
}

/// Has LevelDB rewrite every table of `tables` (the current version), and returns the
/// error LevelDB met, if any.
fn rewrite_all(db: &Db, tables: &[TableReport]) -> Result<(), String> {
    // Compacting the whole range leaves the deepest level's tables alone when nothing
    // above overlaps them. Writing the first and last records again (the same values)
    // puts a table spanning the whole range on top, so that every level below is merged
    // and rewritten.
    let Some(records) = db.first_and_last()? else {
        // Nothing is live (every key deleted): deletion markers for the tables' first and
        // last keys (deleting what is deleted changes nothing) span the range, and the
        // compaction drops every marker, leaving no table.
        let user_key = |k: &Vec<u8>| crate::table::user_key_of(k).to_vec();
        let first = tables
            .iter()
            .filter_map(|t| t.first_key.as_ref())
            .map(user_key)
            .min();
        let last = tables
            .iter()
            .filter_map(|t| t.last_key.as_ref())
            .map(user_key)
            .max();
        for key in first.iter().chain(&last) {
            db.delete(key)?;
        }
        db.compact_all();
        return db.background_error();
    };
    for (key, value) in &records {
        db.put(key, value)?;
    }
    db.compact_all();
    db.background_error()
}

/// Whether a table carries `policy`'s filters: a filter block under LevelDB's policy name
/// whose every filter is as long as the new policy builds it for its keys, and of its format.
fn carries(t: &TableReport, policy: AnyPolicy) -> bool {
    t.filters_read
        && t.filter_shapes.iter().all(|shape| match shape.filter {
            None => false,
            Some((len, _)) if shape.keys == 0 => len == 0,
            Some((len, last)) => builds(policy, shape.keys, len, last),
        })
}

/// What to say when LevelDB's paranoid checks refuse the database at open (a damaged
/// write-ahead log or MANIFEST): nothing was rewritten, and what can still be recovered.
fn corruption_at_open(path: &Path, leveldb: &str) -> String {
    format!(
        "{}: damaged: LevelDB's paranoid checks refuse to open it ({leveldb}); nothing was \
         rewritten. Opened without those checks, LevelDB would drop the damaged records for \
         good at its next compaction. To recover what can be read, copy the directory, then run \
         LevelDB's RepairDB on the copy (leveldb::RepairDB, or leveldb_repair_db in C): it keeps \
         every record whose checksum holds and puts files it cannot read in lost/",
        shown(path)
    )
}

/// What to say when LevelDB cannot open the database.
fn open_failure(path: &Path, leveldb: &str) -> String {
    // LevelDB's lock error: "IO error: lock <dir>/LOCK: Resource temporarily unavailable",
    // or "... already held by process" within one process.
    let held = leveldb.contains("/LOCK:")
        && (leveldb.contains("unavailable") || leveldb.contains("already held"));
    if held {
        format!(
            "{}: in use: another process has the database open ({leveldb}); close it and run \
             again",
            shown(path)
        )
    } else {
        format!("{}: LevelDB cannot open it: {leveldb}", shown(path))
    }
}
