//! `inspect` and `verify`, and what every subcommand shares: reading a database as LevelDB
//! reads it (under its lock), what is said of it, exit statuses. `upgrade` is in
//! [`crate::upgrade`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::files::{self, ReadError, shown};
use crate::lock::{DatabaseLock, LockError};
use crate::manifest;
use crate::orphans;
use crate::report::{self, Keys, TableReport};
use crate::table::OpenTable;
use crate::wal::{self, LogDamage, LogReport};
use crate::way_back::{Found, WayBack};
use leveldb_bloom::Format;

/// `--format`: the library's formats by their names, each with its help line.
pub fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let help = |format| match format {
        Format::Bloom => "LevelDB's own Bloom filters (leveldb.BuiltinBloomFilter2)",
        Format::Compact => {
            "leveldb-bloom's compact filters (read by stock LevelDB as \"may match\")"
        }
    };
    PossibleValuesParser::new(
        Format::ALL.map(|format| PossibleValue::new(format.name()).help(help(format))),
    )
    .map(|name| Format::from_name(&name).expect("one of the possible values"))
}

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
pub(crate) fn emit(text: &str) -> Result<(), Failure> {
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
pub(crate) fn lock(dir: &Path, write: bool) -> Result<DatabaseLock, Failure> {
    let taken = if write {
        DatabaseLock::write(dir)
    } else {
        DatabaseLock::read(dir)
    };
    taken.map_err(|e| lock_failure(dir, write, e))
}

pub(crate) fn lock_failure(dir: &Path, write: bool, e: LockError) -> Failure {
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
            "{}: cannot take LevelDB's lock ({}: {e}){}",
            shown(dir),
            shown(&dir.join("LOCK")),
            if e.raw_os_error() == Some(libc::EISDIR) {
                "; no LevelDB can open the database while it is so"
            } else {
                ""
            }
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
pub(crate) struct Analysis {
    pub(crate) tables: Vec<TableReport>,
    /// Table files outside the current version.
    not_live: Vec<PathBuf>,
    /// The write-ahead logs recovery replays, each read as it does.
    logs: Vec<LogReport>,
    /// The table files outside the current version, held against it.
    orphans: Vec<Orphan>,
    /// The MANIFEST's last sequence number.
    last_sequence: u64,
    /// What LevelDB's recovery or next writes turn into loss ([`manifest::Version::hazards`]).
    pub(crate) hazards: Vec<String>,
    /// The MANIFEST's next file number.
    #[cfg_attr(not(feature = "upgrade"), expect(dead_code, reason = "upgrade's"))]
    pub(crate) next_file: u64,
    /// The way back an upgrade that did not finish left (or what else holds its name).
    way_back: Found,
}

/// A table file outside the current version: how many of its records the version (its
/// tables and write-ahead logs) lacks, or why it cannot be read whole.
struct Orphan {
    file: String,
    lacking: Result<u64, String>,
}

impl Analysis {
    pub(crate) fn damaged_logs(&self) -> impl Iterator<Item = (&LogReport, &LogDamage)> {
        self.logs
            .iter()
            .filter_map(|log| log.damage.as_ref().map(|damage| (log, damage)))
    }

    /// What to say of a way back an upgrade that did not finish left.
    fn way_back_line(&self) -> Option<String> {
        match &self.way_back {
            Found::Nothing => None,
            Found::WayBack(way_back) => Some(format!(
                "warning: {}: an upgrade that did not finish kept the database's files as they \
                 were before it here (holding their space); the next `leveldb-bloom upgrade` \
                 removes it once LevelDB reads the records it read before, and `leveldb-bloom \
                 upgrade --undo` puts those files back",
                shown(way_back.folder())
            )),
            Found::Foreign(name) => Some(format!(
                "warning: {}: holds the name of the folder `upgrade` keeps its way back in, and \
                 is not one (a file or a link); `upgrade` refuses the database until it is \
                 moved away",
                shown(name)
            )),
        }
    }

    /// What to say of the intact records LevelDB's recovery skips in the logs.
    pub(crate) fn skipped_lines(&self) -> impl Iterator<Item = String> {
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
    pub(crate) fn lost_at_open(&self) -> impl Iterator<Item = (&str, u64)> {
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
pub(crate) fn analyze_all(
    path: &Path,
    database: bool,
    keys: Option<Keys>,
) -> Result<Analysis, Failure> {
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
    let held = orphans::merged_ranges(logs.iter().flat_map(|log| log.sequences.clone()).collect());
    let last_sequence = target.version.as_ref().map_or(0, |v| v.last_sequence);
    let highest_logged = held.iter().map(|&(_, end)| end.saturating_sub(1)).max();
    let hazards = target
        .version
        .as_ref()
        .map(|v| v.hazards(highest_logged.unwrap_or(0)))
        .unwrap_or_default();
    let live = target
        .version
        .as_ref()
        .map_or(&[][..], |v| v.live.as_slice());
    let mut version = orphans::Version::new(live, &target.logs);
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
                    orphans::records_beyond(
                        &OpenTable::new(opened, len),
                        last_sequence,
                        &held,
                        &mut |key| version.holds(key),
                    )
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
        way_back: if database {
            WayBack::found(path)
        } else {
            Found::Nothing
        },
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
