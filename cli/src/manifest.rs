//! Which table files make up a database's current version: `CURRENT` names the MANIFEST,
//! a log (LevelDB's `doc/log_format.md`) of version edits (`db/version_edit.cc`); applying
//! them in order leaves the live files of each level.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::table::{unmask_crc, varint64};

/// A table of the current version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTable {
    pub level: u32,
    pub number: u64,
    pub size: u64,
    pub path: PathBuf,
}

/// The database's tables: the live ones, and table files in the directory that are not
/// part of the current version (left by a crash, or by another version of the database).
#[derive(Debug, Default)]
pub struct Version {
    pub manifest: PathBuf,
    pub live: Vec<LiveTable>,
    pub not_live: Vec<PathBuf>,
}

/// An error naming the file and, where it applies, the offset in it: `damaged` when the
/// files are there but do not read as LevelDB writes them, else an I/O error.
#[derive(Debug)]
pub struct Error {
    pub message: String,
    pub damaged: bool,
}

fn damaged(message: String) -> Error {
    Error {
        message,
        damaged: true,
    }
}

const BLOCK_SIZE: usize = 32768;
const HEADER_LEN: usize = 7;
const FULL: u8 = 1;
const FIRST: u8 = 2;
const MIDDLE: u8 = 3;
const LAST: u8 = 4;

/// The records of a LevelDB log file, fragments joined.
fn records(data: &[u8], path: &Path) -> Result<Vec<Vec<u8>>, Error> {
    let bad =
        |at: usize, what: &str| damaged(format!("{}: at offset {at}: {what}", path.display()));
    let mut out = Vec::new();
    let mut pending: Option<Vec<u8>> = None;
    let mut pos = 0;
    while pos < data.len() {
        let left_in_block = BLOCK_SIZE - pos % BLOCK_SIZE;
        if left_in_block < HEADER_LEN {
            pos += left_in_block;
            continue;
        }
        let Some(header) = data.get(pos..pos + HEADER_LEN) else {
            break; // a header cut short by a crash: the log ends here, as LevelDB reads it
        };
        let len = usize::from(u16::from_le_bytes([header[4], header[5]]));
        let kind = header[6];
        if kind == 0 && len == 0 {
            pos += left_in_block; // zeroed (preallocated) space
            continue;
        }
        let start = pos + HEADER_LEN;
        if len > left_in_block - HEADER_LEN {
            return Err(bad(pos, "record length past its block"));
        }
        let Some(payload) = data.get(start..start + len) else {
            break; // a record cut short by a crash
        };
        let stored = unmask_crc(u32::from_le_bytes(header[..4].try_into().expect("4")));
        if stored != crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload) {
            return Err(bad(pos, "record checksum mismatch"));
        }
        match (kind, pending.as_mut()) {
            (FULL, None) => out.push(payload.to_vec()),
            (FIRST, None) => pending = Some(payload.to_vec()),
            (MIDDLE, Some(record)) => record.extend_from_slice(payload),
            (LAST, Some(record)) => {
                record.extend_from_slice(payload);
                out.extend(pending.take());
            }
            _ => return Err(bad(pos, &format!("unexpected record type {kind}"))),
        }
        pos = start + len;
    }
    Ok(out)
}

fn slice<'a>(data: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = usize::try_from(varint64(data, pos)?).ok()?;
    let s = data.get(*pos..pos.checked_add(len)?)?;
    *pos += len;
    Some(s)
}

/// Applies one version edit's file additions and deletions to `files`.
fn apply(edit: &[u8], files: &mut BTreeMap<(u32, u64), u64>) -> Option<()> {
    let mut pos = 0;
    while pos < edit.len() {
        match varint64(edit, &mut pos)? {
            1 => {
                slice(edit, &mut pos)?; // comparator name
            }
            2..=4 | 9 => {
                varint64(edit, &mut pos)?; // log, next file, last sequence, previous log
            }
            5 => {
                varint64(edit, &mut pos)?; // compact pointer: level, key
                slice(edit, &mut pos)?;
            }
            6 => {
                let level = u32::try_from(varint64(edit, &mut pos)?).ok()?;
                let number = varint64(edit, &mut pos)?;
                files.remove(&(level, number));
            }
            7 => {
                let level = u32::try_from(varint64(edit, &mut pos)?).ok()?;
                let number = varint64(edit, &mut pos)?;
                let size = varint64(edit, &mut pos)?;
                slice(edit, &mut pos)?; // smallest and largest keys
                slice(edit, &mut pos)?;
                files.insert((level, number), size);
            }
            _ => return None,
        }
    }
    Some(())
}

/// The table file of `number` in `dir`: `NNNNNN.ldb`, or the older `NNNNNN.sst`.
fn table_path(dir: &Path, number: u64) -> PathBuf {
    let ldb = dir.join(format!("{number:06}.ldb"));
    let sst = dir.join(format!("{number:06}.sst"));
    if !ldb.exists() && sst.exists() {
        sst
    } else {
        ldb
    }
}

/// Whether `dir` is a database directory (it has `CURRENT`).
pub fn is_database(dir: &Path) -> bool {
    dir.join("CURRENT").is_file()
}

/// The current version of the database in `dir`.
pub fn current_version(dir: &Path) -> Result<Version, Error> {
    // A file of the database that is missing is damage; any other failure to read, I/O.
    let io = |p: &Path, e: std::io::Error| Error {
        message: format!("{}: {e}", p.display()),
        damaged: e.kind() == std::io::ErrorKind::NotFound && p != dir,
    };
    let current_path = dir.join("CURRENT");
    let current = fs::read_to_string(&current_path).map_err(|e| io(&current_path, e))?;
    let name = current.strip_suffix('\n').unwrap_or(&current);
    if !name.starts_with("MANIFEST-") || name.contains('/') {
        return Err(damaged(format!(
            "{}: does not name a MANIFEST ({name:?})",
            current_path.display()
        )));
    }
    let manifest = dir.join(name);
    let data = fs::read(&manifest).map_err(|e| io(&manifest, e))?;
    let mut files = BTreeMap::new();
    for (i, edit) in records(&data, &manifest)?.iter().enumerate() {
        apply(edit, &mut files).ok_or_else(|| {
            damaged(format!(
                "{}: version edit {i} is malformed",
                manifest.display()
            ))
        })?;
    }
    let live: Vec<LiveTable> = files
        .into_iter()
        .map(|((level, number), size)| LiveTable {
            level,
            number,
            size,
            path: table_path(dir, number),
        })
        .collect();
    let mut not_live = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = entry.map_err(|e| io(dir, e))?.path();
        let is_table = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("ldb" | "sst")
        );
        if is_table && !live.iter().any(|t| t.path == path) {
            not_live.push(path);
        }
    }
    not_live.sort();
    Ok(Version {
        manifest,
        live,
        not_live,
    })
}
