//! What the commands read of a database or a table file, held against its MANIFEST (each
//! table, the write-ahead logs, the table files outside the current version), and what is
//! said of what they find.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use crate::failure::{Failure, Kind};
use crate::files::{self, shown};
use crate::lock::DatabaseLock;
use crate::manifest;
use crate::orphans;
use crate::report::{self, Keys, TableReport};
use crate::table::OpenTable;
use crate::target::{Target, is_database_dir};
use crate::wal::{self, LogDamage, LogReport};
use crate::way_back::{Found, WayBack};

/// What the commands read of a database or a table file.
pub(crate) struct Analysis {
    pub(crate) tables: Vec<TableReport>,
    /// Table files outside the current version.
    pub(crate) not_live: Vec<PathBuf>,
    /// The write-ahead logs recovery replays, each read as it does.
    pub(crate) logs: Vec<LogReport>,
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
    pub(crate) fn way_back_line(&self) -> Option<String> {
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

    /// "N records in M logs", the logs named `log` (singular and plural), where the
    /// write-ahead logs hold records.
    pub(crate) fn logged(&self, log: (&str, &str)) -> Option<String> {
        let records = self.log_records();
        (records > 0).then(|| {
            format!(
                "{} in {}",
                counted(records, "record", "records"),
                counted(self.logs.len() as u64, log.0, log.1)
            )
        })
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
    pub(crate) fn orphan_lines(&self) -> impl Iterator<Item = (bool, String)> {
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
pub(crate) fn log_damage(log: &LogReport, damage: &LogDamage) -> String {
    format!(
        "{}: at offset {}: {} (a damaged write-ahead log: LevelDB with paranoid \
         checks refuses to open the database, and without them drops the log's records from \
         here on, for good at its next compaction; LevelDB's RepairDB, on a copy, keeps the \
         records whose checksums hold)",
        log.file, damage.offset, damage.what
    )
}

/// The analysis `inspect` and `verify` print: of a database, read under LevelDB's read
/// lock, which stays taken as long as the caller keeps the lock returned.
pub(crate) fn analyze_read_only(
    path: &Path,
    keys: Option<Keys>,
) -> Result<(Option<DatabaseLock>, Analysis), Failure> {
    let database = is_database_dir(path)?;
    let lock = database.then(|| DatabaseLock::read(path)).transpose()?;
    let analysis = analyze_all(path, database, keys)?;
    Ok((lock, analysis))
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
    let target = Target::of(path, database, keys)?;
    let tables = analyze_tables(&target)?;
    let logs: Vec<LogReport> = target.logs.iter().map(|log| wal::read_log(log)).collect();
    let held = orphans::merged_ranges(logs.iter().flat_map(|log| log.sequences.clone()).collect());
    let version = target.version.as_ref();
    let last_sequence = version.map_or(0, |v| v.last_sequence);
    let highest_logged = held.iter().map(|&(_, end)| end.saturating_sub(1)).max();
    let hazards = version
        .map(|v| v.hazards(highest_logged.unwrap_or(0)))
        .unwrap_or_default();
    let orphans = orphans_of(&target, last_sequence, &held);
    Ok(Analysis {
        tables,
        logs,
        orphans,
        last_sequence,
        hazards,
        next_file: version.map_or(0, |v| v.next_file),
        not_live: target.not_live,
        way_back: if database {
            WayBack::found(path)
        } else {
            Found::Nothing
        },
    })
}

/// Every table of `target`, in order, a progress bar counting them.
fn analyze_tables(target: &Target) -> Result<Vec<TableReport>, Failure> {
    let bar = ProgressBar::new(target.tables.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} tables {msg}")
            .expect("a valid template"),
    );
    let mut reports = Vec::new();
    for (file, live) in &target.tables {
        bar.set_message(file_name(file));
        reports.push(analyze_table(file, live.as_ref(), target.keys)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(reports)
}

/// One table file, as LevelDB reads it: up to the size the MANIFEST records (`live`, in a
/// database), and held against the rest of what it records. A table that cannot be read is
/// a report of that damage; only an I/O error ends the command.
fn analyze_table(
    file: &Path,
    live: Option<&manifest::LiveTable>,
    keys: Option<Keys>,
) -> Result<TableReport, Failure> {
    let name = file_name(file);
    let limit = live.map_or(u64::MAX, |t| t.file.size);
    let report = match files::open_regular(file) {
        Ok((opened, file_len)) => {
            let table = OpenTable::new(opened, file_len.min(limit));
            if live.is_none()
                && !crate::table::has_table_magic(&table).map_err(|e| e.within(file))?
            {
                return Err(Failure::at(
                    file,
                    Kind::Usage,
                    "not a LevelDB table (it does not end in a table footer)",
                ));
            }
            let keys = keys.unwrap_or_else(|| report::keys_of(&table));
            let mut report = match report::analyze(name.clone(), &table, keys) {
                Ok(report) => report,
                // The system failed a read: nothing is known of the bytes.
                Err(e) if e.kind() == Kind::Io => return Err(e.within(file)),
                Err(e) => unreadable(
                    &name,
                    e.offset().unwrap_or_default(),
                    format!("cannot read the table: {}", e.what()),
                ),
            };
            if let Some(live) = live {
                against_manifest(live, file_len, &mut report);
            }
            report
        }
        Err(e) if e.kind() == Kind::NotFound && live.is_some() => unreadable(
            &name,
            0,
            "table file of the current version is missing".into(),
        ),
        Err(e) if matches!(e.kind(), Kind::NotRegular(_)) => {
            unreadable(&name, 0, e.what().to_owned())
        }
        Err(e) => return Err(e),
    };
    Ok(TableReport {
        level: live.map(|t| t.file.level),
        ..report
    })
}

/// The table files of `target` outside its version, each held against the version: its
/// tables, and the sequence numbers its write-ahead logs hold (`held`).
fn orphans_of(target: &Target, last_sequence: u64, held: &[(u64, u64)]) -> Vec<Orphan> {
    let live = target
        .version
        .as_ref()
        .map_or(&[][..], |v| v.live.as_slice());
    let mut version = orphans::Version::new(live, &target.logs);
    target
        .not_live
        .iter()
        .map(|file| Orphan {
            file: file_name(file),
            // Said in the file's own line, which names it.
            lacking: files::open_regular(file)
                .map_err(|e| e.what().to_owned())
                .and_then(|(opened, len)| {
                    orphans::records_beyond(
                        &OpenTable::new(opened, len),
                        last_sequence,
                        held,
                        &mut |key| version.holds(key),
                    )
                    .map_err(|e| e.to_string())
                }),
        })
        .collect()
}

/// A file's name as the command prints it (the path, where it has none).
fn file_name(file: &Path) -> String {
    file.file_name()
        .map_or_else(|| shown(file), |n| shown(Path::new(n)))
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

/// `n` and the noun, singular for one.
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
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
