//! `upgrade`: LevelDB itself rewrites every table of a database with a new filter policy,
//! and the result is proven (LevelDB reads the same records after it as before) or the
//! database is put back exactly as it was ([`WayBack`]).

use std::path::Path;

use crate::analysis::{Analysis, analyze_all};
use crate::failure::{Failure, Kind, OK, PROBLEM, emit};
use crate::files::shown;
use crate::leveldb::Db;
use crate::lock::DatabaseLock;
use crate::manifest;
use crate::report::{self, TableReport};
use crate::way_back::{self, Fingerprint, Found, WayBack};
use leveldb_bloom::AnyPolicy;

/// `upgrade PATH --format F [--bits-per-key N]`: LevelDB rewrites every table with the
/// new policy. Its own compaction writes the new tables and then the MANIFEST that names
/// them, so the database stays readable whatever fails on the way. The upgrade proves its
/// own result: what LevelDB reads after the rewrite must be what it read before, record for
/// record, or the database is put back exactly as it was ([`WayBack`]), unless another
/// process wrote to it meanwhile (LevelDB's closing releases the process's lock until the
/// command takes it back), whose writes are never undone. Succeeds only when, besides, every
/// table of the current version carries the new filters and LevelDB reported no error.
pub fn upgrade(path: &Path, policy: AnyPolicy) -> Result<u8, Failure> {
    must_be_database(path)?;
    let (held, analysis, way_back) = lock_and_prepare(path, policy)?;
    let before = analysis.tables.as_slice();
    let snappy = before.iter().any(|t| t.compressed_blocks > 0);
    let (as_left, read_before) = rewrite(path, &held, &way_back, policy, snappy, before)?;
    prove_on_disk(
        path,
        &held,
        &way_back,
        &as_left,
        policy,
        snappy,
        &read_before,
    )?;
    discard_way_back(path, &way_back)?;
    after_upgrade(path, policy)
}

/// Refuses a `path` that is not a database directory.
fn must_be_database(path: &Path) -> Result<(), Failure> {
    if !path.is_dir() || !manifest::is_database(path) {
        return Err(Failure::at(
            path,
            Kind::Usage,
            "not a LevelDB database directory (no CURRENT file)",
        ));
    }
    Ok(())
}

/// The write lock, then the database read in full and its way back made ([`prepare`]).
fn lock_and_prepare(
    path: &Path,
    policy: AnyPolicy,
) -> Result<(DatabaseLock, Analysis, WayBack), Failure> {
    // The write lock first: a database in use, or one that cannot be written, is said at
    // once, before any table is read. A LOCK file the command creates for a database it
    // then refuses is removed again: a refusal changes no file.
    let created_lock = path.join("LOCK").symlink_metadata().is_err();
    let held = DatabaseLock::write(path)?;
    let prepared = prepare(path, &held, policy);
    if prepared.is_err() && created_lock {
        let _ = std::fs::remove_file(path.join("LOCK"));
    }
    let (analysis, way_back) = prepared?;
    Ok((held, analysis, way_back))
}

/// LevelDB opens the database with the new policy, reads every record (what it read is
/// recorded in the way back), rewrites every table and closes it. The files as LevelDB left
/// them, and what it read before the rewrite; on a failure the database is put back, or
/// its way back kept where what LevelDB wrote is not known to be on disk.
fn rewrite(
    path: &Path,
    held: &DatabaseLock,
    way_back: &WayBack,
    policy: AnyPolicy,
    snappy: bool,
    before: &[TableReport],
) -> Result<(Fingerprint, way_back::Digest), Failure> {
    // What the directory holds before LevelDB opens it: a failed open changes nothing
    // else (LevelDB's info log aside).
    let unopened = Fingerprint::of(path).map_err(|e| cannot_fingerprint(path, &e))?;
    let db = match Db::open(path, Some(policy), snappy, false) {
        Ok(db) => db,
        Err(e) => {
            let failure = match e.kind() {
                Kind::Corruption => corruption_at_open(path, &e),
                _ => open_failure(path, &e),
            };
            // LevelDB's failed open released the process's lock.
            return Err(put_back(path, held, way_back, &unopened, failure));
        }
    };
    let checked = (|| {
        let read = db.digest().map_err(|e| {
            Failure::at(
                path,
                Kind::Damaged,
                format!("LevelDB cannot read every record ({e}); run `leveldb-bloom verify`"),
            )
            .caused_by(&e)
        })?;
        way_back.record_before(&read).map_err(|e| {
            let e = Failure::from(e);
            Failure::at(
                way_back.folder(),
                Kind::Io,
                format!("cannot record what LevelDB read ({e})"),
            )
            .caused_by(&e)
        })?;
        Ok((read, rewrite_all(&db, before).err()))
    })();
    // The files as LevelDB leaves them, before closing releases the process's lock.
    let as_left = Fingerprint::of(path).map_err(|e| cannot_fingerprint(path, &e));
    drop(db);
    let as_left = as_left?;
    let (read_before, leveldb_error) = match checked {
        Ok(done) => done,
        Err(failure) => return Err(put_back(path, held, way_back, &as_left, failure)),
    };
    if let Some(e) = leveldb_error {
        // What LevelDB wrote after an I/O error is not known to be on disk, whatever reads
        // back now: the way back stays until an upgrade proves the database from the disk.
        return Err(unfinished(path, way_back, &e));
    }
    Ok((as_left, read_before))
}

/// Removes the way back of a proven upgrade.
fn discard_way_back(path: &Path, way_back: &WayBack) -> Result<(), Failure> {
    way_back.discard().map_err(|e| {
        // Named where it is now: the removal renames the folder before removing it.
        let left = [way_back.folder().to_path_buf(), WayBack::discarded(path)]
            .into_iter()
            .find(|folder| folder.symlink_metadata().is_ok());
        let what = match left {
            Some(folder) => format!(
                "the upgrade is proven, but its way back could not be removed ({e}); remove \
                 {} to free the old tables' space",
                shown(&folder)
            ),
            None => format!(
                "the upgrade is proven and its way back removed, but the removal could not be \
                 made durable ({e}); should a power cut bring the folder back, the next \
                 upgrade removes it"
            ),
        };
        Failure::at(path, Kind::Io, what)
    })
}

/// The totals after a proven upgrade, and the tables that do not carry the new filters
/// (a problem: the upgrade did not finish).
fn after_upgrade(path: &Path, policy: AnyPolicy) -> Result<u8, Failure> {
    let after = analyze_all(path, true, None)?.tables;
    emit(&report::summary("after", &report::total(&after)))?;
    let stale: Vec<&str> = after
        .iter()
        .filter(|t| !t.problems.is_empty() || !carries(t, policy))
        .map(|t| t.file.as_str())
        .collect();
    if stale.is_empty() {
        return Ok(OK);
    }
    emit(&format!(
        "not rewritten (they keep their old filters): {}\nthe upgrade did not finish, and \
         every record reads as before, from the disk; running the upgrade again finishes the \
         job\n",
        stale.join(", ")
    ))?;
    Ok(PROBLEM)
}

/// Proves the rewrite from the disk (LevelDB closed, with no error): the directory synced,
/// the database opened again, LevelDB reads what it read before. Otherwise the database is
/// put back, or its way back kept where it cannot be. The command holds the lock after.
#[allow(clippy::too_many_arguments)]
fn prove_on_disk(
    path: &Path,
    held: &DatabaseLock,
    way_back: &WayBack,
    as_left: &Fingerprint,
    policy: AnyPolicy,
    snappy: bool,
    read_before: &way_back::Digest,
) -> Result<(), Failure> {
    let keep = |why: String| kept_back(path, way_back, &why);
    // `done`: how far the upgrade got, said before why it stops there.
    let retake = |done: &str| {
        held.retake()
            .map_err(|e| keep(format!("{}: {done}{e}", shown(path))))
    };
    let sync = |done: &str| {
        way_back::sync_dir(path).map_err(|e| {
            keep(format!(
                "{}: {done}, but LevelDB's files cannot be made durable ({e})",
                shown(path)
            ))
        })
    };
    retake("the upgrade is not proven: ")?;
    let unchanged = Fingerprint::of(path).map_err(|e| cannot_fingerprint(path, &e))?;
    if unchanged != *as_left {
        return Err(keep(format!(
            "{}: the upgrade is not proven: {}",
            shown(path),
            way_back::changed()
        )));
    }
    sync("rewritten")?;
    let db = Db::open(path, Some(policy), snappy, false).map_err(|e| {
        let failure = Failure::at(
            path,
            Kind::Damaged,
            format!("LevelDB cannot open the rewritten database ({e}): the upgrade is not proven"),
        )
        .caused_by(&e);
        put_back(path, held, way_back, as_left, failure)
    })?;
    let read_after = db.digest();
    let reopened = Fingerprint::of(path).map_err(|e| cannot_fingerprint(path, &e));
    drop(db);
    let reopened = reopened?;
    if read_after.as_ref() != Ok(read_before) {
        let after = match &read_after {
            Ok(read) => format!("{read} after it"),
            Err(e) => format!("cannot read it after it ({e})"),
        };
        let mut failure = Failure::at(
            path,
            Kind::Damaged,
            format!(
                "LevelDB read {read_before} before the rewrite and {after}: the upgrade is not \
                 proven"
            ),
        );
        if let Err(e) = &read_after {
            failure = failure.caused_by(e);
        }
        return Err(put_back(path, held, way_back, &reopened, failure));
    }
    retake("rewritten and proven, ")?;
    // LevelDB's open renamed a new CURRENT into place: durable before the way back goes.
    sync("rewritten and proven")
}

/// What to say when LevelDB reported `error` during the rewrite: the way back is kept, and
/// the next upgrade settles the database from what is on disk.
fn unfinished(path: &Path, way_back: &WayBack, error: &Failure) -> Failure {
    let room = if error.disk_full() {
        " (free some space first: the way back holds the old tables' space, and LevelDB \
         needs room to open the database)"
    } else {
        ""
    };
    Failure::at(
        path,
        Kind::Unfinished,
        format!(
            "LevelDB reported: {error}. The upgrade did not finish; every record reads as \
             before, after a power cut too, and since what LevelDB wrote after an error is not \
             known to be on disk, {} keeps the database's files as they were before the \
             upgrade. Run the upgrade again{room}: it reads the database from the disk, then \
             removes that folder and finishes the job; `leveldb-bloom upgrade --undo {}` puts \
             those files back instead",
            shown(way_back.folder()),
            shown(path)
        ),
    )
}

/// The database at `path` read in full, if `upgrade` may hand it to LevelDB: no damage, no
/// state LevelDB's recovery turns into loss, no intact log records LevelDB would skip.
fn rewritable(path: &Path) -> Result<Analysis, Failure> {
    let analysis = analyze_all(path, true, None)?;
    if !analysis.hazards.is_empty() {
        return Err(Failure::at(
            path,
            Kind::Damaged,
            format!("damaged: {}; not rewritten", analysis.hazards.join("; ")),
        ));
    }
    if let Some(line) = analysis.skipped_lines().next() {
        return Err(Failure::at(
            path,
            Kind::Damaged,
            format!(
                "not rewritten: opening it, LevelDB would make a loss in its log final ({line})"
            ),
        ));
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
        return Err(Failure::at(
            path,
            Kind::Damaged,
            format!(
                "damaged ({}: run `leveldb-bloom verify`); not rewritten",
                damaged.join(", ")
            ),
        ));
    }
    Ok(analysis)
}

/// Everything before LevelDB opens the database: a put-back an interrupted upgrade began is
/// finished (and the command stops), the database is read and checked, a way back an
/// interrupted upgrade left is settled, and the way back of this upgrade is made.
fn prepare(
    path: &Path,
    held: &DatabaseLock,
    policy: AnyPolicy,
) -> Result<(Analysis, WayBack), Failure> {
    WayBack::clear_discarded(path).map_err(|e| {
        Failure::at(
            path,
            Kind::Io,
            format!(
                "cannot finish removing an earlier upgrade's way back ({e}); nothing rewritten"
            ),
        )
    })?;
    match WayBack::found(path) {
        Found::Foreign(name) => {
            return Err(Failure::at(
                &name,
                Kind::Usage,
                "something that is not the command's folder holds the name of its way back (a \
                 file or a link); move it away and run again; nothing rewritten",
            ));
        }
        // Settled first, before the database is judged: it is an earlier upgrade's state.
        Found::WayBack(left) => settle(path, held, &left, policy)?,
        Found::Nothing => {}
    }
    let analysis = rewritable(path)?;
    emit(&report::summary("before", &report::total(&analysis.tables)))?;
    let way_back = WayBack::make(path, analysis.next_file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            // A file listed a moment before is gone: LevelDB's open renames its info log
            // before it tries the lock, so another process is opening the database.
            Failure::at(
                path,
                Kind::InUse,
                "in use: a file of the database vanished while the command kept them (another \
                 process is opening it); nothing rewritten, run again",
            )
        } else {
            Failure::at(
                path,
                Kind::Io,
                format!(
                    "cannot keep the way back in {} ({e}); nothing rewritten",
                    shown(&path.join(way_back::FOLDER))
                ),
            )
        }
    })?;
    Ok((analysis, way_back))
}

/// Puts the database back after `failure` (LevelDB closed), and says so with it: once the
/// lock is taken back, and only if the files are still `as_left`.
fn put_back(
    path: &Path,
    held: &DatabaseLock,
    way_back: &WayBack,
    as_left: &Fingerprint,
    failure: Failure,
) -> Failure {
    if let Err(e) = held.retake() {
        return kept_back(path, way_back, &format!("{failure}; {e}"));
    }
    match way_back.put_back(as_left) {
        Ok(()) => {
            let room = if failure.disk_full() {
                ": free some space, then run the upgrade again"
            } else {
                ""
            };
            failure.and(&format!(
                "; the database is put back exactly as it was{room}"
            ))
        }
        Err(e) => kept_back(path, way_back, &format!("{failure}; {e}")),
    }
}

/// What to say when the database is left as it is, its way back kept: `why`, and the ways on.
fn kept_back(path: &Path, way_back: &WayBack, why: &str) -> Failure {
    Failure::new(
        Kind::Unfinished,
        format!(
            "{why}. Not put back: {} holds the database's files as they were before the upgrade. \
         To keep the database as it is, remove that folder; to put those files back (which \
         drops whatever was written since), run `leveldb-bloom upgrade --undo {}`",
            shown(way_back.folder()),
            shown(path)
        ),
    )
}

fn cannot_fingerprint(path: &Path, e: &std::io::Error) -> Failure {
    Failure::at(
        path,
        Kind::Io,
        format!("cannot list the database's files ({e})"),
    )
}

/// Settles the way back an earlier, interrupted upgrade left: one not made in full, or made
/// before LevelDB began rewriting, is removed; a put-back begun is finished (and the command
/// stops); one whose database LevelDB reads, from the disk, as it read it before that upgrade
/// is removed. Otherwise the command stops, touching nothing, and says what each way on does.
fn settle(
    path: &Path,
    held: &DatabaseLock,
    left: &WayBack,
    policy: AnyPolicy,
) -> Result<(), Failure> {
    let folder = shown(left.folder());
    let cannot = |e: std::io::Error| Failure::from(e).within(left.folder());
    if !left.whole() {
        // Stopped while it was made, before LevelDB opened the database: the moved files go
        // back where their names are free.
        left.abandon();
        return Ok(());
    }
    if left.putting_back() {
        // It is half one version and half the other until putting back is finished, unless
        // another process wrote since.
        return Err(match left.resume_put_back() {
            Ok(()) => Failure::at(
                path,
                Kind::Unfinished,
                "an earlier upgrade could not prove its result and was putting the database \
                 back; that is finished, and the database is as it was before that upgrade. \
                 Nothing rewritten: run the upgrade again",
            ),
            Err(e) => kept_back(path, left, &e.to_string()),
        });
    }
    let before = match left.before() {
        Ok(Some(before)) => before,
        // LevelDB had not begun rewriting: the database is what LevelDB's open left.
        Ok(None) => {
            left.abandon();
            return Ok(());
        }
        Err(e) => return Err(kept_back(path, left, &format!("{folder}: {e}"))),
    };
    let now = Db::open(path, Some(policy), true, false).and_then(|db| db.digest());
    held.retake()?;
    match now {
        Ok(now) if now == before => {
            way_back::sync_dir(path).map_err(cannot)?;
            left.discard().map_err(cannot)
        }
        // A full disk keeps LevelDB from opening the database (it writes a new MANIFEST and
        // log) and says nothing of its records; the way back holding the old tables' space
        // makes this likely.
        Err(e) if e.disk_full() => Err(Failure::at(
            path,
            Kind::Unfinished,
            format!(
                "an earlier upgrade did not finish, and LevelDB cannot open the database to \
                 check it ({e}). Nothing rewritten; {folder} holds the database's files as \
                 they were before that upgrade. To go on, free some space (that folder holds \
                 the old tables' space, and LevelDB needs room to open the database), then \
                 run the upgrade again: it settles that upgrade and finishes the job; \
                 `leveldb-bloom upgrade --undo {}` puts those files back instead",
                shown(path)
            ),
        )
        .caused_by(&e)),
        now => Err(Failure::at(
            path,
            Kind::Unfinished,
            format!(
                "an earlier upgrade did not finish, and LevelDB now reads {} where it read \
                 {before} before that upgrade: a program wrote to the database since, it was \
                 damaged since, or the upgrade lost records. Nothing rewritten. {folder} holds \
                 the database's files as they were before that upgrade: to keep the database \
                 as it is, remove that folder; to put those files back, run `leveldb-bloom \
                 upgrade --undo {}`",
                now.map_or_else(|e| format!("nothing ({e})"), |now| now.to_string()),
                shown(path)
            ),
        )),
    }
}

/// `upgrade --undo PATH`: puts back the files an interrupted upgrade kept, whatever was
/// written since (the operator's call).
pub fn undo(path: &Path) -> Result<u8, Failure> {
    must_be_database(path)?;
    let _held = DatabaseLock::write(path)?;
    let left = match WayBack::found(path) {
        Found::WayBack(left) => left,
        Found::Nothing => {
            return Err(Failure::at(
                path,
                Kind::Usage,
                "no upgrade left a way back here; nothing to put back",
            ));
        }
        Found::Foreign(name) => {
            return Err(Failure::at(
                &name,
                Kind::Usage,
                "not the command's folder (a file or a link); nothing to put back",
            ));
        }
    };
    if !left.whole() {
        return Err(Failure::at(
            left.folder(),
            Kind::Usage,
            "the upgrade that left it stopped before LevelDB opened the database, while making \
             it; nothing to put back (the next upgrade removes it, moving back what it had \
             moved aside)",
        ));
    }
    left.put_back_anyway()
        .map_err(|e| e.within(left.folder()))?;
    emit("put back: the database is as it was before the upgrade that did not finish\n")?;
    Ok(OK)
}

/// Has LevelDB rewrite every table of `tables` (the current version), and returns the
/// error LevelDB met, if any.
fn rewrite_all(db: &Db, tables: &[TableReport]) -> Result<(), Failure> {
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
            Some((len, last)) => {
                policy.shapes_like(usize::try_from(shape.keys).unwrap_or(usize::MAX), len, last)
            }
        })
}

/// What to say when LevelDB's paranoid checks refuse the database at open (a damaged
/// write-ahead log or MANIFEST): nothing was rewritten, and what can still be recovered.
fn corruption_at_open(path: &Path, leveldb: &Failure) -> Failure {
    Failure::at(
        path,
        Kind::Corruption,
        format!(
            "damaged: LevelDB's paranoid checks refuse to open it ({leveldb}); nothing was \
             rewritten. Opened without those checks, LevelDB would drop the damaged records for \
             good at its next compaction. To recover what can be read, copy the directory, then \
             run LevelDB's RepairDB on the copy (leveldb::RepairDB, or leveldb_repair_db in C): \
             it keeps every record whose checksum holds and puts files it cannot read in lost/"
        ),
    )
    .caused_by(leveldb)
}

/// What to say when LevelDB cannot open the database.
fn open_failure(path: &Path, leveldb: &Failure) -> Failure {
    let failure = if leveldb.kind() == Kind::InUse {
        Failure::at(
            path,
            Kind::InUse,
            format!(
                "in use: another process has the database open ({leveldb}); close it and run \
                 again"
            ),
        )
    } else {
        Failure::at(
            path,
            Kind::LevelDb,
            format!("LevelDB cannot open it: {leveldb}"),
        )
    };
    failure.caused_by(leveldb)
}
