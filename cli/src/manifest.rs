//! Which table files make up a database's current version, read as LevelDB's recovery reads
//! them (`db/version_set.cc`, `VersionSet::Recover`; `db/db_impl.cc`, `DBImpl::Recover`):
//! `CURRENT` names the MANIFEST, a log ([`crate::log_reader`]) of version edits (`db/version_edit.cc`); applying them in order leaves the live tables of each level,
//! each with its size and key range. What LevelDB refuses is damage here; what it reads
//! without complaint (a record torn at the log's end by a crash) is not.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::failure::{Failure, Kind};
use crate::files;
use crate::log_reader::log_records;
use crate::table::{compare_internal_keys, varint32};

/// A table of the current version: the MANIFEST's record of it, and its file's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTable {
    pub file: NewFile,
    pub path: PathBuf,
}

/// The database's tables: the live ones, and table files in the directory that are not
/// part of the current version (left by a crash, or by another version of the database).
#[derive(Debug, Default)]
pub struct Version {
    pub manifest: PathBuf,
    pub live: Vec<LiveTable>,
    pub not_live: Vec<PathBuf>,
    /// The write-ahead logs LevelDB's recovery replays on top of the tables, in order.
    pub logs: Vec<PathBuf>,
    /// The last sequence number the MANIFEST records: every record of the live tables is at
    /// or below it; newer ones are in the logs.
    pub last_sequence: u64,
    /// The next file number the MANIFEST records.
    pub next_file: u64,
    /// The log number the MANIFEST records (logs below it are in tables).
    pub log_number: u64,
    /// The number in the name of the MANIFEST `CURRENT` names (if it is LevelDB's form).
    pub manifest_number: Option<u64>,
}

/// LevelDB's largest sequence number (`db/dbformat.h`, `kMaxSequenceNumber`): a record's
/// sequence number shares 64 bits with its 8-bit type.
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// The sequence numbers a database must have left below [`MAX_SEQUENCE`]. LevelDB does not
/// check a write against the maximum (`DBImpl::Write` adds each batch's count to the last
/// sequence number): past it, new records carry sequence numbers that run into their type
/// byte, and compactions drop records. No database reaches 2^56 - 2^32 by writing (at a
/// million writes a second, that takes two thousand years), so a last sequence number this
/// close to the maximum is damage, and leaves any writer (and `upgrade`'s three writes)
/// room enough.
pub const SEQUENCE_ROOM: u64 = 1 << 32;

impl Version {
    /// What LevelDB's recovery or its next writes turn into loss in this version, each with
    /// its fix; `highest_logged` is the highest sequence number the live logs hold.
    ///
    /// - A live table numbered at or above the next file number: recovery numbers its new
    ///   MANIFEST `next_file` and its new tables from `next_file + 1` on
    ///   (`VersionSet::Recover`, which sets them after marking the logs' numbers used), and
    ///   creating a table under a live table's number truncates the live one.
    /// - The MANIFEST `CURRENT` names numbered at or above it: recovery writes its new
    ///   MANIFEST over the one it reads. (A live log numbered at or above it is what a crash
    ///   leaves between creating a log and recording it, and recovery marks each log's
    ///   number used before it creates one: `DBImpl::Recover`.)
    /// - A log number at or above the next file number: opening the database, LevelDB
    ///   records a new log numbered below it (`DB::Open`), which a LevelDB built with
    ///   assertions (Debian's) aborts on (`VersionSet::LogAndApply`).
    /// - Fewer than [`SEQUENCE_ROOM`] sequence numbers left.
    pub fn hazards(&self, highest_logged: u64) -> Vec<String> {
        let mut hazards = Vec::new();
        let manifest = files::shown(
            self.manifest
                .file_name()
                .map_or(self.manifest.as_ref(), Path::new),
        );
        let repair = "LevelDB's RepairDB, run on a copy of the directory (leveldb::RepairDB, \
                      leveldb_repair_db in C), rewrites the MANIFEST from the tables and logs";
        if let Some(table) = self
            .live
            .iter()
            .map(|t| t.file.number)
            .filter(|&n| n >= self.next_file)
            .max()
        {
            hazards.push(format!(
                "{manifest}: its next file number {} is at or below live table {table:06}'s \
                 number: opening the database, LevelDB creates a new table under a live \
                 table's number and truncates the live one. {repair}, with a next file number \
                 above every file",
                self.next_file
            ));
        }
        if let Some(number) = self.manifest_number.filter(|&n| n >= self.next_file) {
            hazards.push(format!(
                "{manifest}: its next file number {} is at or below its own number {number}: \
                 opening the database, LevelDB writes its new MANIFEST over this one (a crash \
                 meanwhile leaves no MANIFEST). {repair}",
                self.next_file
            ));
        }
        if self.log_number >= self.next_file {
            hazards.push(format!(
                "{manifest}: its log number {} is at or above its next file number {}: \
                 opening the database, LevelDB records a new log numbered below it, and a \
                 LevelDB built with assertions (Debian's) aborts. {repair}",
                self.log_number, self.next_file
            ));
        }
        let highest = self.last_sequence.max(highest_logged);
        if MAX_SEQUENCE.saturating_sub(highest) < SEQUENCE_ROOM {
            let left = MAX_SEQUENCE.saturating_sub(highest);
            hazards.push(format!(
                "the last sequence number is {highest}, {left} below LevelDB's maximum \
                 (2^56-1): LevelDB does not check its writes against it, and records written \
                 past it are lost at the next compaction. {repair}, taking the last sequence \
                 number from the records themselves; if they are this high too, copy the \
                 records into a new database"
            ));
        }
        hazards
    }
}

/// What a file in a database directory is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `NNNNNN.log`.
    Log,
    /// `NNNNNN.ldb` or `NNNNNN.sst`.
    Table,
    /// `MANIFEST-NNNNNN`.
    Manifest,
    /// `NNNNNN.dbtmp` (the temporary file `CURRENT` is written through).
    Temp,
}

/// A file name's number and kind, as LevelDB's `ParseFileName` (`db/filename.cc`) reads
/// it; `None` for the names LevelDB gives no number (`CURRENT`, `LOCK`, `LOG`) and for
/// every name LevelDB leaves alone.
pub fn parse_file_name(name: &std::ffi::OsStr) -> Option<(u64, FileKind)> {
    let name = name.to_str()?;
    let number = |digits: &str| {
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
    };
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return number(rest).map(|n| (n, FileKind::Manifest));
    }
    let (digits, suffix) = name.split_once('.')?;
    let kind = match suffix {
        "log" => FileKind::Log,
        "ldb" | "sst" => FileKind::Table,
        "dbtmp" => FileKind::Temp,
        _ => return None,
    };
    number(digits).map(|n| (n, kind))
}

/// Damage in the MANIFEST's or `CURRENT`'s bytes: LevelDB refuses the database.
fn damaged(what: String) -> Failure {
    Failure::new(Kind::Damaged, what)
}

/// LevelDB's `config::kNumLevels`.
const NUM_LEVELS: u32 = 7;
/// The comparator this tool orders keys by: LevelDB's default.
const BYTEWISE: &[u8] = b"leveldb.BytewiseComparator";

/// A varint of at most 10 bytes (LevelDB's `GetVarint64`).
fn varint64(data: &[u8], pos: &mut usize) -> Option<u64> {
    crate::table::varint64(data, pos)
}

fn slice<'a>(data: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = varint32(data, pos)? as usize;
    let s = data.get(*pos..pos.checked_add(len)?)?;
    *pos += len;
    Some(s)
}

fn level(data: &[u8], pos: &mut usize) -> Option<u32> {
    varint32(data, pos).filter(|&l| l < NUM_LEVELS)
}

/// LevelDB's `GetInternalKey`: a length-prefixed, non-empty key.
fn internal_key(data: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    slice(data, pos)
        .filter(|k| !k.is_empty())
        .map(<[u8]>::to_vec)
}

/// A table an edit adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFile {
    pub level: u32,
    pub number: u64,
    /// The file's size as the MANIFEST records it: LevelDB reads the table's footer there.
    pub size: u64,
    /// The table's first and last internal keys, as the MANIFEST records them.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// One decoded version edit (`VersionEdit::DecodeFrom`).
#[derive(Debug, Default)]
struct Edit {
    comparator: Option<Vec<u8>>,
    log_number: Option<u64>,
    prev_log_number: Option<u64>,
    next_file: Option<u64>,
    last_sequence: Option<u64>,
    deleted: Vec<(u32, u64)>,
    added: Vec<NewFile>,
}

/// Decodes a version edit; `Err` names the field LevelDB reports.
fn decode(edit: &[u8]) -> Result<Edit, &'static str> {
    let mut e = Edit::default();
    let mut pos = 0;
    while pos < edit.len() {
        let Some(tag) = varint32(edit, &mut pos) else {
            return Err("invalid tag");
        };
        let p = &mut pos;
        match tag {
            1 => e.comparator = Some(slice(edit, p).ok_or("comparator name")?.to_vec()),
            2 => e.log_number = Some(varint64(edit, p).ok_or("log number")?),
            9 => e.prev_log_number = Some(varint64(edit, p).ok_or("previous log number")?),
            3 => e.next_file = Some(varint64(edit, p).ok_or("next file number")?),
            4 => e.last_sequence = Some(varint64(edit, p).ok_or("last sequence number")?),
            5 => {
                level(edit, p)
                    .and_then(|_| internal_key(edit, p))
                    .ok_or("compaction pointer")?;
            }
            6 => {
                let deleted = level(edit, p).zip(varint64(edit, p));
                e.deleted.push(deleted.ok_or("deleted file")?);
            }
            7 => {
                let added = (|| {
                    Some(NewFile {
                        level: level(edit, p)?,
                        number: varint64(edit, p)?,
                        size: varint64(edit, p)?,
                        smallest: internal_key(edit, p)?,
                        largest: internal_key(edit, p)?,
                    })
                })();
                e.added.push(added.ok_or("new-file entry")?);
            }
            _ => return Err("unknown tag"),
        }
    }
    Ok(e)
}

/// The tables of a level in LevelDB's order: by smallest internal key, then number.
fn internal_order(a: &NewFile, b: &NewFile) -> std::cmp::Ordering {
    compare_internal_keys(&a.smallest, &b.smallest).then(a.number.cmp(&b.number))
}

/// The table file of `number` in `dir`: `NNNNNN.ldb`, or the older `NNNNNN.sst` where the
/// `.ldb` cannot be opened and the `.sst` can, as LevelDB's table cache looks
/// (`TableCache::FindTable`: the `.sst` when opening the `.ldb` fails).
fn table_path(dir: &Path, number: u64) -> PathBuf {
    let ldb = dir.join(format!("{number:06}.ldb"));
    let sst = dir.join(format!("{number:06}.sst"));
    if !leveldb_opens(&ldb) && leveldb_opens(&sst) {
        sst
    } else {
        ldb
    }
}

/// Whether LevelDB's POSIX environment opens the file at `path` for its table cache: a
/// file it can open for reading and map into memory, which an empty file, a directory or a
/// missing one (a dangling link) is not. (Past its first thousand tables LevelDB reads
/// without mapping, and an empty file opens; a database holding a thousand such files is
/// not one this command is asked about.)
fn leveldb_opens(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.len() > 0 && std::fs::File::open(path).is_ok())
}

/// The live logs of the database in `dir`: files `NNNNNN.log` with a number at or above
/// `log_number` or equal to `prev_log_number`, by number, as recovery replays them.
pub fn live_logs(
    dir: &Path,
    log_number: u64,
    prev_log_number: u64,
) -> std::io::Result<Vec<PathBuf>> {
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if let Some((number, FileKind::Log)) = path.file_name().and_then(parse_file_name)
            && (number >= log_number || number == prev_log_number)
        {
            logs.push((number, path));
        }
    }
    logs.sort();
    Ok(logs.into_iter().map(|(_, path)| path).collect())
}

/// Whether `dir` is a database directory (it has `CURRENT`).
pub fn is_database(dir: &Path) -> bool {
    dir.join("CURRENT").symlink_metadata().is_ok()
}

/// Reads one of the database's own files: missing or not a regular file is damage.
fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    files::read_regular(path).map_err(|e| match e.kind() {
        Kind::Io => e,
        _ => e.with_kind(Kind::Damaged),
    })
}

/// The tables of the current version a MANIFEST's bytes describe, by level and in
/// LevelDB's order within a level, as `VersionSet::Recover` applies its edits. Fails as
/// [`Kind::Damaged`] where LevelDB refuses the MANIFEST, as [`Kind::Foreign`] where it is
/// readable but not this tool's.
pub fn live_tables(data: &[u8]) -> Result<Vec<NewFile>, Failure> {
    replay(data).map(|replayed| replayed.live)
}

/// What applying a MANIFEST's edits leaves.
struct Replayed {
    live: Vec<NewFile>,
    /// The write-ahead logs recovery replays: from `log_number` on, and `prev_log_number`.
    log_number: u64,
    prev_log_number: u64,
    last_sequence: u64,
    next_file: u64,
}

/// [`live_tables`], with the log numbers.
fn replay(data: &[u8]) -> Result<Replayed, Failure> {
    let records = log_records(data)?;
    let (mut log_number, mut next_file, mut last_sequence) = (None, None, None);
    let mut prev_log_number = None;
    let mut added: BTreeMap<u32, Vec<NewFile>> = BTreeMap::new();
    // What each level's added tables are keyed by in LevelDB's builder (a set ordered by
    // smallest key, then number): a second addition of the same is ignored.
    let mut added_keys: HashSet<(u32, u64, Vec<u8>)> = HashSet::new();
    let mut deleted: BTreeSet<(u32, u64)> = BTreeSet::new();
    for (i, record) in records.iter().enumerate() {
        let edit =
            decode(record).map_err(|field| damaged(format!("version edit {i}: bad {field}")))?;
        if let Some(name) = edit.comparator.filter(|name| name != BYTEWISE) {
            return Err(foreign_comparator(&name));
        }
        log_number = edit.log_number.or(log_number);
        prev_log_number = edit.prev_log_number.or(prev_log_number);
        next_file = edit.next_file.or(next_file);
        last_sequence = edit.last_sequence.or(last_sequence);
        // LevelDB's VersionSet::Builder: a deletion is remembered per level, an addition
        // forgets it; a table added twice keeps its first description.
        deleted.extend(edit.deleted);
        for file in edit.added {
            deleted.remove(&(file.level, file.number));
            if added_keys.insert((file.level, file.number, file.smallest.clone())) {
                added.entry(file.level).or_default().push(file);
            }
        }
    }
    if next_file == Some(u64::MAX) {
        return Err(damaged(
            "the next file number is 2^64-1, past the last LevelDB can use (LevelDB aborts \
             opening the database)"
                .into(),
        ));
    }
    for (missing, what) in [
        (next_file.is_none(), "no next-file-number entry"),
        (log_number.is_none(), "no log-number entry"),
        (last_sequence.is_none(), "no last-sequence-number entry"),
    ] {
        if missing {
            return Err(damaged(format!(
                "{what} (LevelDB refuses to open the database)"
            )));
        }
    }
    Ok(Replayed {
        live: live_files(added, &deleted)?,
        log_number: log_number.unwrap_or_default(),
        prev_log_number: prev_log_number.unwrap_or_default(),
        last_sequence: last_sequence.unwrap_or_default(),
        next_file: next_file.unwrap_or_default(),
    })
}

/// A database whose keys another comparator orders than the one this tool reads.
fn foreign_comparator(name: &[u8]) -> Failure {
    Failure::new(
        Kind::Foreign,
        format!(
            "the database orders its keys with the comparator {:?}; this tool reads only {} \
             databases",
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(BYTEWISE)
        ),
    )
}

/// The live tables, level by level in LevelDB's order: those `added` that were not
/// `deleted` after.
fn live_files(
    added: BTreeMap<u32, Vec<NewFile>>,
    deleted: &BTreeSet<(u32, u64)>,
) -> Result<Vec<NewFile>, Failure> {
    let mut live = Vec::new();
    for (level, mut files) in added {
        files.sort_by(internal_order);
        files.retain(|f| !deleted.contains(&(level, f.number)));
        // Above level 0 a level's tables hold disjoint key ranges: LevelDB's lookups find
        // one table per level (and a LevelDB built with assertions aborts at open).
        if level > 0
            && let Some(pair) = files
                .windows(2)
                .find(|w| compare_internal_keys(&w[0].largest, &w[1].smallest).is_ge())
        {
            return Err(damaged(format!(
                "tables {:06} and {:06} of level {level} overlap (LevelDB's lookups miss keys \
                 in one of them, and a LevelDB built with assertions aborts at open)",
                pair[0].number, pair[1].number
            )));
        }
        live.extend(files);
    }
    Ok(live)
}

/// The current version of the database in `dir`, as LevelDB's recovery finds it. Fails as
/// [`live_tables`] does, as [`Kind::Damaged`] where a file LevelDB reads is missing or not a
/// regular file, else as [`Kind::Io`].
pub fn current_version(dir: &Path) -> Result<Version, Failure> {
    let current_path = dir.join("CURRENT");
    let current = read(&current_path)?;
    let Some(name) = current.strip_suffix(b"\n") else {
        return Err(Failure::at(
            &current_path,
            Kind::Damaged,
            "does not end with a newline (LevelDB refuses to open the database)",
        ));
    };
    // LevelDB opens the directory, "/" and the name as a C string: up to a NUL, and a name
    // in a subdirectory or not UTF-8 is as good as any.
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    if name.is_empty() {
        return Err(Failure::at(
            &current_path,
            Kind::Damaged,
            "names no MANIFEST (LevelDB refuses to open the database)",
        ));
    }
    let manifest = dir.join(std::ffi::OsStr::from_bytes(name));
    let data = read(&manifest).map_err(|e| e.and(" (named by CURRENT)"))?;
    let replayed = replay(&data).map_err(|e| e.within(&manifest))?;
    let live: Vec<LiveTable> = replayed
        .live
        .into_iter()
        .map(|file| LiveTable {
            path: table_path(dir, file.number),
            file,
        })
        .collect();
    let mut not_live = Vec::new();
    let io = |e: std::io::Error| Failure::from(e).within(dir);
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let is_table = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("ldb" | "sst")
        );
        if is_table && !live.iter().any(|t| t.path == path) {
            not_live.push(path);
        }
    }
    not_live.sort();
    let logs = live_logs(dir, replayed.log_number, replayed.prev_log_number).map_err(io)?;
    Ok(Version {
        live,
        not_live,
        logs,
        last_sequence: replayed.last_sequence,
        next_file: replayed.next_file,
        log_number: replayed.log_number,
        manifest_number: manifest
            .file_name()
            .and_then(parse_file_name)
            .filter(|&(_, kind)| kind == FileKind::Manifest)
            .map(|(n, _)| n),
        manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_reader::tests::frame;
    use crate::log_reader::{BLOCK_SIZE, FULL, HEADER_LEN};

    #[test]
    fn edits_decode_as_leveldb_decodes_them() {
        let mut edit = vec![1, 3, b'c', b'm', b'p', 2, 5, 3, 9, 4, 100];
        edit.extend([7, 1, 12, 200, 1, 9]);
        edit.extend(b"aaaaaaaaa");
        edit.extend([9]);
        edit.extend(b"zzzzzzzzz");
        let e = decode(&edit).unwrap();
        assert_eq!(e.comparator.as_deref(), Some(&b"cmp"[..]));
        assert!(e.log_number == Some(5) && e.next_file == Some(9) && e.last_sequence == Some(100));
        assert_eq!(
            (e.added[0].level, e.added[0].number, e.added[0].size),
            (1, 12, 200)
        );
        // Level 7 does not exist; an empty key is refused; an unknown tag; a cut field.
        assert_eq!(decode(&[6, 7, 1]).unwrap_err(), "deleted file");
        assert_eq!(decode(&[5, 1, 0]).unwrap_err(), "compaction pointer");
        assert_eq!(decode(&[8, 1]).unwrap_err(), "unknown tag");
        assert_eq!(decode(&[3]).unwrap_err(), "next file number");
        assert_eq!(decode(&[0x80]).unwrap_err(), "invalid tag");
    }

    /// A field of a version edit: its tag, its numbers (varints), its byte strings
    /// (length-prefixed).
    type Field<'a> = (u8, &'a [u64], &'a [&'a [u8]]);

    /// A version edit's bytes.
    fn edit(fields: &[Field]) -> Vec<u8> {
        let mut out = Vec::new();
        let varint = |mut v: u64, out: &mut Vec<u8>| {
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        };
        for (tag, numbers, strings) in fields {
            out.push(*tag);
            for &n in *numbers {
                varint(n, &mut out);
            }
            for s in *strings {
                varint(s.len() as u64, &mut out);
                out.extend_from_slice(s);
            }
        }
        out
    }

    /// A long history (a MANIFEST of 180,000 edits: tables added and deleted again, as
    /// compactions leave it) replays to the one table still live. Its time is reported by
    /// the test; the replay was quadratic in the tables added.
    #[test]
    fn a_long_history_replays_to_its_live_tables() {
        let mut log = Vec::new();
        let mut push = |record: Vec<u8>| {
            // One fragment per record, each inside its block (as LevelDB's writer pads).
            let left = BLOCK_SIZE - log.len() % BLOCK_SIZE;
            if left < HEADER_LEN + record.len() {
                log.resize(log.len() + left, 0);
            }
            log.extend(frame(FULL, &record));
        };
        push(edit(&[
            (1, &[], &[BYTEWISE]),
            (2, &[1], &[]),
            (3, &[200_000], &[]),
            (4, &[9], &[]),
        ]));
        for n in 10..90_010u64 {
            let smallest = format!("key{n:08}\x01\0\0\0\0\0\0\0");
            let largest = format!("key{n:08}z\x01\0\0\0\0\0\0\0");
            push(edit(&[(
                7,
                &[1, n, 1000],
                &[smallest.as_bytes(), largest.as_bytes()],
            )]));
            if n != 50_000 {
                push(edit(&[(6, &[1, n], &[])]));
            }
        }
        let start = std::time::Instant::now();
        let live = live_tables(&log).unwrap();
        println!(
            "{} bytes, 179,999 edits replayed in {:?}",
            log.len(),
            start.elapsed()
        );
        assert_eq!(live.len(), 1);
        assert_eq!((live[0].level, live[0].number), (1, 50_000));
    }

    #[test]
    fn live_logs_are_those_recovery_replays() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "000003.log",
            "000005.log",
            "000007.log",
            "000009.log",
            "x.log",
            "000011.ldb",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let names = |logs: Vec<PathBuf>| -> Vec<String> {
            logs.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(live_logs(dir.path(), 7, 3).unwrap()),
            ["000003.log", "000007.log", "000009.log"]
        );
        assert_eq!(
            names(live_logs(dir.path(), 10, 0).unwrap()),
            Vec::<String>::new()
        );
    }
}
