//! The subcommands: what each reads, prints and returns as its exit status.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::files::{self, ReadError, shown};
use crate::leveldb::{Db, builds};
use crate::lock::{DatabaseLock, LockError};
use crate::manifest;
use crate::report::{self, Keys, TableReport};
use crate::table::OpenTable;
use crate::wal::{self, LogDamage, LogReport};
use crate::way_back::{self, WayBack};
use leveldb_bloom::AnyPolicy;

/// All is well.
pub const OK: u8 = 0;
/// A check found a problem.
pub const PROBLEM: u8 = 1;
/// Usage or I/O error.
pub const ERROR: u8 = 2;

/// What ends a command early: its message (for standard error) and exit status.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub status: u8,
}

impl Failure {
    /// A usage or I/O error: [`ERROR`].
    pub fn error(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            status: ERROR,
        }
    }

    /// Damage that stops the command from reading on (a corrupt MANIFEST): [`PROBLEM`].
    pub fn damaged(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            status: PROBLEM,
        }
    }
}

/// Writes `text` to standard output. A reader that went away (`| head`) only ends the
/// output; any other write error is a failure.
fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::error(format!("writing the output: {e}")))
        }
        _ => Ok(()),
    }
}

/// The tables a PATH names, each with what the MANIFEST says of it (for a database).
struct Target {
    tables: Vec<(PathBuf, Option<manifest::LiveTable>)>,
    not_live: Vec<PathBuf>,
    /// The write-ahead logs recovery replays (a database's).
    logs: Vec<PathBuf>,
    /// The current version (a database's), its tables taken into `tables`.
    version: Option<manifest::Version>,
    /// `None`: as each table's keys show ([`report::keys_of`]).
    keys: Option<Keys>,
}

/// Whether `path` is a database directory (`Err` when it is a directory that is not one).
fn is_database_dir(path: &Path) -> Result<bool, Failure> {
    let meta =
        std::fs::metadata(path).map_err(|e| Failure::error(format!("{}: {e}", shown(path))))?;
    if meta.is_dir() && !manifest::is_database(path) {
        return Err(Failure::error(format!(
            "{}: not a LevelDB database (no CURRENT file)",
            shown(path)
        )));
    }
    Ok(meta.is_dir())
}

/// LevelDB's lock on the database in `dir`, taken before anything of it is read: a read
/// lock for the commands that only read, the write lock for `upgrade`.
fn lock(dir: &Path, write: bool) -> Result<DatabaseLock, Failure> {
    let taken = if write {
        DatabaseLock::write(dir)
    } else {
        DatabaseLock::read(dir)
    };
    taken.map_err(|e| lock_failure(dir, write, e))
}

fn lock_failure(dir: &Path, write: bool, e: LockError) -> Failure {
    match e {
        LockError::InUse => Failure::error(format!(
            "{}: in use: another process has the database open; close it and run again",
            shown(dir)
        )),
        LockError::Io(e) if write && e.raw_os_error() == Some(libc::EROFS) => {
            Failure::error(format!(
                "{}: on a read-only file system; nothing rewritten",
                shown(dir)
            ))
        }
        LockError::Io(e) if write => Failure::error(format!(
            "{}: cannot take LevelDB's lock to rewrite it ({}: {e}); nothing rewritten",
            shown(dir),
            shown(&dir.join("LOCK"))
        )),
        LockError::Io(e) => Failure::error(format!(
            "{}: cannot take LevelDB's lock ({}: {e})",
            shown(dir),
            shown(&dir.join("LOCK"))
        )),
    }
}

fn target(path: &Path, database: bool, keys: Option<Keys>) -> Result<Target, Failure> {
    if !database {
        return Ok(Target {
            tables: vec![(path.to_path_buf(), None)],
            not_live: Vec::new(),
            logs: Vec::new(),
            version: None,
            keys,
        });
    }
    if keys == Some(Keys::User) {
        return Err(Failure::error(format!(
            "{}: a database's tables hold internal keys; --keys user is for a table file \
             written with LevelDB's TableBuilder",
            shown(path)
        )));
    }
    let version = manifest::current_version(path).map_err(|e| {
        if e.damaged {
            Failure::damaged(e.message)
        } else {
            Failure::error(e.message)
        }
    })?;
    Ok(Target {
        tables: version
            .live
            .iter()
            .map(|t| (t.path.clone(), Some(t.clone())))
            .collect(),
        not_live: version.not_live.clone(),
        logs: version.logs.clone(),
        version: Some(version),
        keys: Some(Keys::Internal),
    })
}

/// What the commands read of a database or a table file.
struct Analysis {
    tables: Vec<TableReport>,
    /// Table files outside the current version.
    not_live: Vec<PathBuf>,
    /// The write-ahead logs recovery replays, each read as it does.
    logs: Vec<LogReport>,
    /// The table files outside the current version, held against it.
    orphans: Vec<Orphan>,
    /// The MANIFEST's last sequence number.
    last_sequence: u64,
    /// What LevelDB's recovery or next writes turn into loss ([`manifest::Version::hazards`]).
    hazards: Vec<String>,
    /// The MANIFEST's next file number.
    next_file: u64,
    /// The way back an upgrade that did not finish left.
    way_back: Option<PathBuf>,
}

/// A table file outside the current version: how many of its records the version (its
/// tables and write-ahead logs) lacks, or why it cannot be read whole.
struct Orphan {
    file: String,
    lacking: Result<u64, String>,
}

impl Analysis {
    fn damaged_logs(&self) -> impl Iterator<Item = (&LogReport, &LogDamage)> {
        self.logs
            .iter()
            .filter_map(|log| log.damage.as_ref().map(|damage| (log, damage)))
    }

    /// What to say of a way back an upgrade that did not finish left.
    fn way_back_line(&self) -> Option<String> {
        self.way_back.as_ref().map(|folder| {
            format!(
                "warning: {}: an upgrade that did not finish kept the database's files as they \
                 were before it here (holding their space); the next `leveldb-bloom upgrade` \
                 removes it once LevelDB reads the records it read before, and `leveldb-bloom \
                 upgrade --undo` puts those files back",
                shown(folder)
            )
        })
    }

    /// What to say of the intact records LevelDB's recovery skips in the logs.
    fn skipped_lines(&self) -> impl Iterator<Item = String> {
        self.logs.iter().flat_map(|log| {
            log.skipped.iter().map(move |skip| {
                let held = if skip.batches > 0 {
                    format!(
                        "with it {} in {} whose checksums hold",
                        counted(skip.records, "intact record", "intact records"),
                        counted(skip.batches, "write batch", "write batches"),
                    )
                } else {
                    format!(
                        "with it {} that are not zero (no intact record among them: records \
                         were there, or garbage)",
                        counted(skip.nonzero_bytes, "byte", "bytes")
                    )
                };
                format!(
                    "warning: {}: at offset {}: a zeroed header; LevelDB's recovery skips the \
                     rest of its 32 KiB block without a word (even with paranoid checks), and \
                     {held}. Stock LevelDB does the same; what is there is lost once LevelDB \
                     opens the database and deletes the log (`upgrade` refuses it): copy the \
                     directory to keep it",
                    log.file, skip.offset,
                )
            })
        })
    }

    /// The records the write-ahead logs hold (not yet in a table).
    fn log_records(&self) -> u64 {
        self.logs.iter().map(|log| log.records).sum()
    }

    /// The table files outside the version that hold records it lacks, with how many.
    fn lost_at_open(&self) -> impl Iterator<Item = (&str, u64)> {
        self.orphans
            .iter()
            .filter_map(|orphan| match orphan.lacking {
                Ok(n) if n > 0 => Some((orphan.file.as_str(), n)),
                _ => None,
            })
    }

    /// What to say of each table file outside the version: a problem (`true`) for those
    /// holding records the version lacks, a note or a warning for the others.
    fn orphan_lines(&self) -> impl Iterator<Item = (bool, String)> {
        self.orphans.iter().map(|orphan| match &orphan.lacking {
            Ok(0) => (
                false,
                format!(
                    "note: {}: not part of the current version, whose tables and logs hold \
                     its records (what a crash during a compaction leaves); LevelDB deletes it \
                     when it opens the database",
                    orphan.file
                ),
            ),
            Ok(n) => (
                true,
                format!(
                    "{}: not part of the current version, and it holds {} the version lacks \
                     (newer than the MANIFEST's last sequence number {}, in no live \
                     write-ahead log): LevelDB deletes this file when it opens the database, \
                     and they are lost. To keep them, copy the directory and run LevelDB's \
                     RepairDB on the copy (leveldb::RepairDB, leveldb_repair_db in C): it \
                     rebuilds the MANIFEST from every table and log it can read (it reads \
                     them all; its tables start at level 0)",
                    orphan.file,
                    counted(*n, "record", "records"),
                    self.last_sequence
                ),
            ),
            Err(e) => (
                false,
                format!(
                    "warning: {}: not part of the current version, and not readable as a \
                     table ({e}); LevelDB deletes it when it opens the database",
                    orphan.file
                ),
            ),
        })
    }
}

/// What to say of a damaged write-ahead log.
fn log_damage(log: &LogReport, damage: &LogDamage) -> String {
    format!(
        "{}: at offset {}: {} (a damaged write-ahead log: LevelDB with paranoid \
         checks refuses to open the database, and without them drops the log's records from \
         here on, for good at its next compaction; LevelDB's RepairDB, on a copy, keeps the \
         records whose checksums hold)",
        log.file, damage.offset, damage.what
    )
}

/// Reads and analyzes every table of `path` (a database directory when `database`, under
/// the lock the caller holds), with a progress bar on stderr when it is a terminal, and a
/// database's write-ahead logs. A table of a database is read as LevelDB reads it, up to the
/// size its MANIFEST records, and held against what the MANIFEST says of it: that size and
/// its first and last keys (where LevelDB looks for keys).
fn analyze_all(path: &Path, database: bool, keys: Option<Keys>) -> Result<Analysis, Failure> {
    let target = target(path, database, keys)?;
    let bar = ProgressBar::new(target.tables.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} tables {msg}")
            .expect("a valid template"),
    );
    let mut reports = Vec::new();
    for (file, live) in &target.tables {
        let name = file
            .file_name()
            .map_or_else(|| shown(file), |n| shown(Path::new(n)));
        bar.set_message(name.clone());
        let limit = live.as_ref().map_or(u64::MAX, |t| t.file.size);
        let report = match files::open_regular(file) {
            Ok((opened, file_len)) => {
                let table = OpenTable::new(opened, file_len.min(limit));
                if live.is_none() && !crate::table::has_table_magic(&table) {
                    return Err(Failure::error(format!(
                        "{}: not a LevelDB table (it does not end in a table footer)",
                        shown(file)
                    )));
                }
                let keys = target.keys.unwrap_or_else(|| report::keys_of(&table));
                let mut report = report::analyze(name.clone(), &table, keys).unwrap_or_else(|e| {
                    unreadable(
                        &name,
                        e.offset,
                        format!("cannot read the table: {}", e.what),
                    )
                });
                if let Some(live) = live {
                    against_manifest(live, file_len, &mut report);
                }
                report
            }
            Err(ReadError::NotFound) if live.is_some() => unreadable(
                &name,
                0,
                "table file of the current version is missing".into(),
            ),
            Err(ReadError::NotRegular(what)) => {
                unreadable(&name, 0, format!("{what}, not a regular file"))
            }
            Err(e) => return Err(Failure::error(format!("{}: {e}", shown(file)))),
        };
        reports.push(TableReport {
            level: live.as_ref().map(|t| t.file.level),
            ..report
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let logs: Vec<LogReport> = target.logs.iter().map(|log| wal::read_log(log)).collect();
    let held = report::merged_ranges(logs.iter().flat_map(|log| log.sequences.clone()).collect());
    let last_sequence = target.version.as_ref().map_or(0, |v| v.last_sequence);
    let highest_logged = held.iter().map(|&(_, end)| end.saturating_sub(1)).max();
    let hazards = target
        .version
        .as_ref()
        .map(|v| v.hazards(highest_logged.unwrap_or(0)))
        .unwrap_or_default();
    let orphans = target
        .not_live
        .iter()
        .map(|file| Orphan {
            file: file
                .file_name()
                .map_or_else(|| shown(file), |n| shown(Path::new(n))),
            lacking: files::open_regular(file)
                .map_err(|e| e.to_string())
                .and_then(|(opened, len)| {
                    report::records_beyond(&OpenTable::new(opened, len), last_sequence, &held)
                        .map_err(|e| e.to_string())
                }),
        })
        .collect();
    Ok(Analysis {
        tables: reports,
        not_live: target.not_live,
        logs,
        orphans,
        last_sequence,
        hazards,
        next_file: target.version.as_ref().map_or(0, |v| v.next_file),
        way_back: database
            .then(|| WayBack::found(path).map(|w| w.folder().to_path_buf()))
            .flatten(),
    })
}

/// Where a table file differs from what the MANIFEST says of it: a file shorter than its
/// recorded size is damage (LevelDB reads the footer there), a longer one a warning (LevelDB
/// reads the first `size` bytes, and so did the analysis); keys outside the recorded range
/// are damage.
fn against_manifest(live: &manifest::LiveTable, file_len: u64, report: &mut TableReport) {
    let mut problems = Vec::new();
    if file_len < live.file.size {
        problems.push(report::Problem {
            offset: 0,
            what: format!(
                "the file has {file_len} bytes, the MANIFEST says {} (LevelDB reads the footer \
                 there: truncated, or another file in its place?)",
                live.file.size
            ),
            count: 1,
        });
    } else if file_len > live.file.size && !report.problems.is_empty() {
        problems.push(report::Problem {
            offset: 0,
            what: format!(
                "the file has {file_len} bytes, the MANIFEST says {}, and its first {} bytes \
                 are not the table LevelDB reads there (another file in its place?)",
                live.file.size, live.file.size
            ),
            count: 1,
        });
    } else if file_len > live.file.size {
        report.warnings.push(report::Problem {
            offset: live.file.size,
            what: format!(
                "{} bytes past the size the MANIFEST records ({}); LevelDB reads only those",
                file_len - live.file.size,
                live.file.size
            ),
            count: 1,
        });
    }
    let range = (report.first_key.as_deref(), report.last_key.as_deref());
    if report.problems.is_empty()
        && problems.is_empty()
        && range != (Some(&live.file.smallest[..]), Some(&live.file.largest[..]))
    {
        let key = |k: Option<&[u8]>| k.map_or_else(|| "none".into(), short_hex);
        problems.push(report::Problem {
            offset: 0,
            what: format!(
                "its keys run from {} to {}, the MANIFEST says {} to {} (LevelDB looks for \
                 other keys here: another table in its place?)",
                key(range.0),
                key(range.1),
                short_hex(&live.file.smallest),
                short_hex(&live.file.largest)
            ),
            count: 1,
        });
    }
    report.problems.extend(problems);
}

/// A key in hex, its first 24 bytes.
fn short_hex(key: &[u8]) -> String {
    let hex: String = key.iter().take(24).map(|b| format!("{b:02x}")).collect();
    if key.len() > 24 { hex + ".." } else { hex }
}

fn unreadable(name: &str, offset: u64, what: String) -> TableReport {
    TableReport {
        file: name.to_string(),
        problems: vec![report::Problem {
            offset,
            what,
            count: 1,
        }],
        ..TableReport::default()
    }
}

#[derive(Serialize)]
struct InspectJson<'a> {
    tables: &'a [TableReport],
    total: &'a TableReport,
    not_live: Vec<String>,
    logs: &'a [LogReport],
}

/// `inspect PATH [--json]`.
pub fn inspect(path: &Path, json: bool, keys: Option<Keys>) -> Result<u8, Failure> {
    let database = is_database_dir(path)?;
    let _lock = database.then(|| lock(path, false)).transpose()?;
    let analysis = analyze_all(path, database, keys)?;
    let Analysis {
        tables, not_live, ..
    } = &analysis;
    let total = report::total(tables);
    if json {
        let doc = InspectJson {
            tables,
            total: &total,
            not_live: not_live.iter().map(|p| p.display().to_string()).collect(),
            logs: &analysis.logs,
        };
        let json = serde_json::to_string_pretty(&doc).map_err(|e| Failure::error(e.to_string()))?;
        emit(&(json + "\n"))?;
    } else {
        let mut text = report::render(tables, &total, not_live);
        let records = analysis.log_records();
        if records > 0 {
            let _ = writeln!(
                text,
                "write-ahead logs: {} in {} (not yet in a table)",
                counted(records, "record", "records"),
                counted(analysis.logs.len() as u64, "log", "logs")
            );
        }
        for (log, damage) in analysis.damaged_logs() {
            let _ = writeln!(text, "{}", log_damage(log, damage));
        }
        for hazard in &analysis.hazards {
            let _ = writeln!(text, "{hazard}");
        }
        for line in analysis.skipped_lines().chain(analysis.way_back_line()) {
            let _ = writeln!(text, "{line}");
        }
        emit(&text)?;
    }
    let damaged = tables.iter().any(|t| !t.problems.is_empty())
        || analysis.damaged_logs().next().is_some()
        || !analysis.hazards.is_empty();
    Ok(if damaged { PROBLEM } else { OK })
}

/// `verify PATH`: the current version as LevelDB's recovery reads it, each table against
/// the MANIFEST, checksums and false negatives; each problem on a line, then what was
/// checked. Warnings (what LevelDB reads anyway) do not change the exit status.
pub fn verify(path: &Path, keys: Option<Keys>) -> Result<u8, Failure> {
    let database = is_database_dir(path)?;
    let _lock = database.then(|| lock(path, false)).transpose()?;
    let analysis = analyze_all(path, database, keys)?;
    let tables = &analysis.tables;
    let mut problems = 0;
    for hazard in &analysis.hazards {
        emit(&(hazard.clone() + "\n"))?;
        problems += 1;
    }
    for (log, damage) in analysis.damaged_logs() {
        emit(&(log_damage(log, damage) + "\n"))?;
        problems += 1;
    }
    for (problem, line) in analysis.orphan_lines() {
        emit(&(line + "\n"))?;
        problems += u64::from(problem);
    }
    for line in analysis.skipped_lines().chain(analysis.way_back_line()) {
        emit(&(line + "\n"))?;
    }
    for t in tables {
        for p in &t.problems {
            emit(&format!(
                "{}: at offset {}: {} ({})\n",
                t.file, p.offset, p.what, p.count
            ))?;
            problems += 1;
        }
        for w in &t.warnings {
            emit(&format!(
                "warning: {}: at offset {}: {}\n",
                t.file, w.offset, w.what
            ))?;
        }
    }
    let damaged = tables.iter().filter(|t| !t.problems.is_empty()).count();
    let damaged_logs = analysis.damaged_logs().count();
    if problems > 0 {
        let mut line = format!(
            "{} in {damaged} of {}",
            counted(problems, "problem", "problems"),
            counted(tables.len() as u64, "table", "tables"),
        );
        if damaged_logs > 0 {
            let _ = write!(
                line,
                " and {damaged_logs} of {}",
                counted(
                    analysis.logs.len() as u64,
                    "write-ahead log",
                    "write-ahead logs"
                )
            );
        }
        if !analysis.hazards.is_empty() {
            let _ = write!(
                line,
                "; {} LevelDB turns into loss",
                counted(analysis.hazards.len() as u64, "state", "states")
            );
        }
        let lost = analysis.lost_at_open().count();
        if lost > 0 {
            let _ = write!(
                line,
                "; {} outside the current version holding records it lacks",
                counted(lost as u64, "table file", "table files")
            );
        }
        emit(&(line + "\n"))?;
        return Ok(PROBLEM);
    }
    let (checked, unchecked): (Vec<&TableReport>, Vec<&TableReport>) =
        tables.iter().partition(|t| t.filters_read);
    let entries = |ts: &[&TableReport]| ts.iter().map(|t| t.entries).sum::<u64>();
    let blocks = tables.iter().map(|t| t.blocks_checked).sum();
    let mut line = format!(
        "ok: {}, {} checksummed",
        counted(tables.len() as u64, "table", "tables"),
        counted(blocks, "block", "blocks"),
    );
    if !checked.is_empty() {
        let found = counted(entries(&checked), "entry", "entries");
        let _ = write!(line, "; {found} found by their filters");
    }
    if !unchecked.is_empty() {
        let _ = write!(
            line,
            "; {} in {} without filters LevelDB reads, not checked against filters",
            counted(entries(&unchecked), "entry", "entries"),
            counted(unchecked.len() as u64, "table", "tables"),
        );
    }
    let log_records = analysis.log_records();
    if log_records > 0 {
        let _ = write!(
            line,
            "; {} in {}, checksummed",
            counted(log_records, "record", "records"),
            counted(
                analysis.logs.len() as u64,
                "write-ahead log",
                "write-ahead logs"
            )
        );
    }
    emit(&(line + "\n"))?;
    Ok(OK)
}

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

/// `n` and the noun, singular for one.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "entry", "entries"), "1 entry");
        assert_eq!(counted(0, "entry", "entries"), "0 entries");
        assert_eq!(counted(2, "table", "tables"), "2 tables");
    }
}
