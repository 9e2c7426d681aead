//! What the drop-in did in every process of the program: the statistics file each process
//! wrote (read through the drop-in's own schema, [`Statistics`]), in a private folder,
//! summed into one [`Summary`].

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use leveldb_bloom::Format;
use leveldb_bloom_dropin_statistics::{Counters, Statistics};

/// What the drop-in did in every process of the program, summed.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// The program's exit status (128 + n for signal n).
    pub status: u8,
    /// The signal that ended the program, if one did: a status above 128 is also a
    /// program's own exit status (a shell whose child a signal ended exits so).
    #[serde(skip)]
    pub signal: Option<i32>,
    /// Why a preload cannot reach the program, if it cannot.
    pub unreachable: Option<String>,
    /// Processes whose drop-in wrote its statistics (at exit: a process that ends with
    /// `_exit` or a signal writes none).
    pub processes: u64,
    /// The formats its policies built, as the processes said (in JSON `format`: their
    /// names joined by commas, null for none).
    #[serde(rename = "format", serialize_with = "format_names")]
    pub formats: Vec<Format>,
    /// The bits per key the drop-in was told (`--bits-per-key`); null where the program's
    /// own were used (or no process reported).
    pub bits_per_key: Option<f64>,
    /// What the drop-in counted, summed (in JSON, each counter a field).
    #[serde(flatten)]
    pub counters: Counters,
    /// The LevelDBs served, each with whose code writes its filters.
    pub served: Vec<String>,
    /// The LevelDBs declined, each with why.
    pub declined: Vec<String>,
    /// Why policies were refused.
    pub refused: Vec<String>,
    /// For compact filters at a known bits per key: table reads saved against Bloom
    /// filters of the same size (absent keys Bloom's expected rate would let through,
    /// less those compact filters let through).
    pub table_reads_saved: Option<u64>,
}

impl Summary {
    /// Adds one process's statistics. A forked child's LevelDBs are its parent's, said with
    /// the parent's where the parent reported (`parent_reported`): the child reports only
    /// its own work.
    fn add(&mut self, file: Statistics, parent_reported: bool) {
        self.processes += 1;
        if !parent_reported {
            for (ours, theirs) in [
                (&mut self.served, file.served),
                (&mut self.declined, file.declined),
                (&mut self.refused, file.refused),
            ] {
                for line in theirs {
                    if !ours.contains(&line) {
                        ours.push(line);
                    }
                }
            }
        }
        // The formats of the processes that used the drop-in, all of them (a process may
        // choose its own); those of the others only while none has.
        let (used, used_before) = (used(&file.counters), used(&self.counters));
        self.counters = self.counters.plus(file.counters);
        if used && !used_before {
            self.formats.clear();
        }
        if used || !used_before {
            for format in file.formats {
                if !self.formats.contains(&format) {
                    self.formats.push(format);
                }
            }
            self.formats.sort_by_key(|format| format.name());
            self.bits_per_key = file.bits_per_key;
        }
    }

    /// The formats' names as the summary says them (`bloom,compact`); `None` for none.
    pub fn format_names(&self) -> Option<String> {
        names(&self.formats)
    }

    /// Whether every filter the drop-in built was compact.
    pub fn compact_only(&self) -> bool {
        self.formats == [Format::Compact]
    }
}

/// Whether `counters` show the drop-in's policies at work.
fn used(counters: &Counters) -> bool {
    counters.dropin_policies > 0 || counters.filters_built > 0
}

/// `formats`' names joined by commas; `None` for none.
fn names(formats: &[Format]) -> Option<String> {
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    (!names.is_empty()).then(|| names.join(","))
}

/// `Summary::formats` as JSON: [`names`], null for none.
fn format_names<S: serde::Serializer>(
    formats: &[Format],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_some(&names(formats))
}

/// The statistics files in `folder`, summed into `summary`.
pub(super) fn summarize(folder: &Path, summary: &mut Summary) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let texts: Vec<String> = entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    let files: Vec<Statistics> = texts.iter().map(|t| Statistics::parse(t)).collect();
    let pids: BTreeSet<u64> = files.iter().map(|f| f.pid).collect();
    for file in files {
        let parent_reported = file
            .forked_from
            .is_some_and(|parent| pids.contains(&parent));
        summary.add(file, parent_reported);
    }
    summary.table_reads_saved = super::savings::table_reads_saved(
        summary.compact_only(),
        summary.bits_per_key,
        summary.counters.no_match,
    );
}

/// A private folder for the processes' statistics files: under TMPDIR, else /tmp, else
/// /dev/shm.
pub(super) fn statistics_folder() -> Option<tempfile::TempDir> {
    let new = |dir: Option<&Path>| {
        let mut builder = tempfile::Builder::new();
        builder.prefix("leveldb-bloom-run-");
        match dir {
            Some(dir) => builder.tempdir_in(dir),
            None => builder.tempdir(),
        }
    };
    new(None)
        .or_else(|_| new(Some(Path::new("/tmp"))))
        .or_else(|_| new(Some(Path::new("/dev/shm"))))
        .ok()
}
