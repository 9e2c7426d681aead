//! The way back from an upgrade: the database's files as they were before LevelDB opened it,
//! kept so that an upgrade whose result cannot be proven puts the database back exactly as
//! it was.
//!
//! Nothing is copied. LevelDB never writes into a file it did not create in the same run
//! (a new MANIFEST, new tables and a new log each get a new number; `CURRENT` and the info
//! log `LOG` are replaced by rename), so a hard link keeps a file's contents for as long as
//! it is needed. The one exception is a name LevelDB may create anew and so truncate: a
//! file numbered at or above the MANIFEST's next file number. A live table or the MANIFEST
//! itself numbered so is damage, refused before this is made
//! ([`crate::manifest::Version::hazards`]); any other such file (a table a crash left, an
//! old MANIFEST, a `.dbtmp`) is obsolete, and is moved out of LevelDB's way instead (LevelDB
//! would delete it at open). A live log numbered so is never created again and is linked.
//!
//! The folder [`FOLDER`] inside the database directory holds `kept/` (the links),
//! `set-aside/` (the moved files), `made` once both are complete, `before` (what LevelDB
//! read before rewriting, once known) and `putting-back` while the database is being put
//! back. LevelDB ignores a directory in a database's directory. Each record is written whole
//! or not at all, whatever cuts the command short, a power cut included: written to a
//! temporary name, synced, renamed into place, its folder synced. Putting back is
//! idempotent: an interrupted one is finished by the next `upgrade`. Every step leaves a
//! database LevelDB opens: the kept files are restored first, `CURRENT` last among them (by
//! rename), and only then are LevelDB's new files removed.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::failure::{Failure, Kind};
use crate::manifest::{FileKind, parse_file_name};

/// The folder inside the database directory that holds the way back.
pub const FOLDER: &str = "leveldb-bloom-way-back";
const KEPT: &str = "kept";
const SET_ASIDE: &str = "set-aside";
const MADE: &str = "made";
const BEFORE: &str = "before";
const PUTTING_BACK: &str = "putting-back";
/// The name (in the folder) a kept file is linked under before it is renamed into place.
const RESTORING: &str = "restoring";
/// The name the folder takes while it is removed: a way back under it is gone, whatever
/// cuts its removal short.
const DISCARDED: &str = "leveldb-bloom-way-back.discarded";

/// The way back of the database in `db`.
#[derive(Debug)]
pub struct WayBack {
    db: PathBuf,
    folder: PathBuf,
}

/// What holds the folder's name in a database directory.
#[derive(Debug)]
pub enum Found {
    /// Nothing: no upgrade left a way back.
    Nothing,
    /// A way back an earlier upgrade left.
    WayBack(WayBack),
    /// Something else under that name (a file, a symbolic link): not the command's.
    Foreign(PathBuf),
}

/// Every file of a database directory as it stands (each name, device, inode and length;
/// LevelDB's info logs, `LOCK` and directories left out), to tell whether another process
/// wrote between two moments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(BTreeSet<(OsString, u64, u64, u64)>);

impl Fingerprint {
    /// The files of the database directory `db` now.
    pub fn of(db: &Path) -> io::Result<Fingerprint> {
        let mut files = BTreeSet::new();
        for name in database_files(db)? {
            if name == "LOG" || name == "LOG.old" {
                continue;
            }
            let meta = db.join(&name).symlink_metadata()?;
            files.insert((name, meta.dev(), meta.ino(), meta.len()));
        }
        Ok(Fingerprint(files))
    }

    /// What [`Fingerprint::text`] wrote; `None` for anything else, an empty text included (a
    /// database has files).
    fn parse(text: &str) -> Option<Fingerprint> {
        if text.is_empty() {
            return None;
        }
        let mut files = BTreeSet::new();
        for line in text.lines() {
            let mut fields = line.splitn(4, ' ');
            let mut number = || fields.next()?.parse::<u64>().ok();
            let (dev, ino, len) = (number()?, number()?, number()?);
            files.insert((OsString::from(fields.next()?), dev, ino, len));
        }
        Some(Fingerprint(files))
    }

    fn text(&self) -> Option<String> {
        let mut text = String::new();
        for (name, dev, ino, len) in &self.0 {
            text += &format!("{dev} {ino} {len} {}\n", name.to_str()?);
        }
        Some(text)
    }
}

/// Why a way back is not put back, where the database changed since the command last held
/// it: another process's writes are never undone.
pub fn changed() -> Failure {
    Failure::new(
        Kind::Changed,
        "the database's files changed after the command last held it (another process wrote \
         to it, or LevelDB's own failed open left a file)",
    )
}

impl WayBack {
    /// What holds the folder's name in `db`: only a real directory is a way back.
    pub fn found(db: &Path) -> Found {
        let folder = db.join(FOLDER);
        match folder.symlink_metadata() {
            Err(_) => Found::Nothing,
            Ok(meta) if meta.is_dir() => Found::WayBack(WayBack {
                db: db.to_path_buf(),
                folder,
            }),
            Ok(_) => Found::Foreign(folder),
        }
    }

    /// The folder, for messages.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Keeps every file of the database in `db` (whose MANIFEST's next file number is
    /// `next_file`) before LevelDB opens it. On failure nothing is left changed.
    pub fn make(db: &Path, next_file: u64) -> io::Result<WayBack> {
        let way_back = WayBack {
            db: db.to_path_buf(),
            folder: db.join(FOLDER),
        };
        fs::create_dir(&way_back.folder)?;
        let made = way_back.keep(next_file);
        if made.is_err() {
            way_back.abandon();
        }
        made.map(|()| way_back)
    }

    /// Undoes an unfinished [`WayBack::make`] (LevelDB has not opened the database): the
    /// moved files go back, the links go with the folder.
    pub fn abandon(&self) {
        let set_aside = self.folder.join(SET_ASIDE);
        for name in names_in(&set_aside).unwrap_or_default() {
            // Only where the name is free (a link never replaces a file): a file another
            // process made since under that name stays.
            let _ = fs::hard_link(set_aside.join(&name), self.db.join(&name));
        }
        let _ = self.discard();
    }

    fn keep(&self, next_file: u64) -> io::Result<()> {
        let (kept, set_aside) = (self.folder.join(KEPT), self.folder.join(SET_ASIDE));
        fs::create_dir(&kept)?;
        fs::create_dir(&set_aside)?;
        for name in self.database_files()? {
            let from = self.db.join(&name);
            match parse_file_name(&name) {
                Some((number, kind)) if number >= next_file && kind != FileKind::Log => {
                    fs::rename(&from, set_aside.join(&name))?;
                }
                kind => {
                    fs::hard_link(&from, kept.join(&name))?;
                    // What is kept must outlast a power cut: LevelDB syncs a table before a
                    // MANIFEST names it, but a log is written unsynced by default.
                    if !matches!(kind, Some((_, FileKind::Table)))
                        && from.symlink_metadata()?.is_file()
                    {
                        File::open(&from)?.sync_all()?;
                    }
                }
            }
        }
        for dir in [&kept, &set_aside, &self.db] {
            sync_dir(dir)?;
        }
        self.write_record(MADE, &listing(&kept)?)
    }

    /// Why the kept files cannot put the database back whole: one the `made` record lists
    /// is gone or changed (an operator freeing space), or the record lists none. A put-back
    /// removes every file not kept, so it begins only from a complete set.
    fn kept_incomplete(&self) -> io::Result<Option<String>> {
        let listed = fs::read(self.folder.join(MADE))?;
        let kept = self.folder.join(KEPT);
        let mut any = false;
        for entry in listed.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            any = true;
            let text = String::from_utf8_lossy(entry);
            let Some((len, name)) = entry
                .iter()
                .position(|&b| b == b' ')
                .map(|at| (&entry[..at], &entry[at + 1..]))
            else {
                return Ok(Some(format!(
                    "its record of what it kept is unreadable ({text})"
                )));
            };
            let len: Option<u64> = std::str::from_utf8(len).ok().and_then(|l| l.parse().ok());
            let name = OsStr::from_bytes(name);
            match kept.join(name).symlink_metadata() {
                Ok(meta) if Some(meta.len()) == len => {}
                _ => {
                    return Ok(Some(format!(
                        "{} is gone or changed",
                        Path::new(KEPT).join(name).display()
                    )));
                }
            }
        }
        Ok((!any).then(|| "its record of what it kept lists nothing".to_owned()))
    }

    /// Writes the record `name` of the folder whole or not at all: `text` under a temporary
    /// name, synced, renamed into place, the folder synced.
    fn write_record(&self, name: &str, text: &[u8]) -> io::Result<()> {
        let scratch = self.folder.join(format!("{name}.writing"));
        let mut file = File::create(&scratch)?;
        file.write_all(text)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&scratch, self.folder.join(name))?;
        sync_dir(&self.folder)
    }

    fn database_files(&self) -> io::Result<Vec<OsString>> {
        database_files(&self.db)
    }

    /// Records what LevelDB read before the rewrite.
    pub fn record_before(&self, digest: &Digest) -> io::Result<()> {
        self.write_record(BEFORE, format!("{digest}\n").as_bytes())
    }

    /// What LevelDB read before the rewrite, if it was recorded; an error where the record
    /// is there and cannot be read.
    pub fn before(&self) -> io::Result<Option<Digest>> {
        match fs::read_to_string(self.folder.join(BEFORE)) {
            Ok(text) => text
                .parse()
                .map(Some)
                .map_err(|()| io::Error::other("the record of what LevelDB read is unreadable")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether putting the database back had begun.
    pub fn putting_back(&self) -> bool {
        self.folder.join(PUTTING_BACK).exists()
    }

    /// Whether the way back is whole: made in full, so that the database can be put back.
    pub fn whole(&self) -> bool {
        self.folder.join(MADE).exists()
    }

    /// Puts the database back exactly as it was, then removes the way back, if the database
    /// is still `as_left` (what it was when the command last held it: another process's
    /// writes are never undone). Only for a [`WayBack::whole`] one: every file not kept is
    /// removed.
    pub fn put_back(&self, as_left: &Fingerprint) -> Result<(), Failure> {
        if !self.whole() {
            return Err(
                io::Error::other("the way back was not made in full; nothing put back").into(),
            );
        }
        if Fingerprint::of(&self.db)? != *as_left {
            return Err(changed());
        }
        self.begin_put_back(as_left)?;
        self.finish_put_back()
    }

    /// Records that putting back begins from the files `as_left` (what
    /// [`WayBack::resume_put_back`] accounts for), once the directory holds them durably.
    pub fn begin_put_back(&self, as_left: &Fingerprint) -> io::Result<()> {
        let text = as_left
            .text()
            .ok_or_else(|| io::Error::other("a file name that is not UTF-8"))?;
        sync_dir(&self.db)?;
        self.write_record(PUTTING_BACK, text.as_bytes())
    }

    /// Finishes a put-back an interrupted run began, if every file of the database is one it
    /// accounts for: as the database was when putting back began, or put back already.
    pub fn resume_put_back(&self) -> Result<(), Failure> {
        let began = fs::read_to_string(self.folder.join(PUTTING_BACK))
            .ok()
            .and_then(|text| Fingerprint::parse(&text))
            .ok_or_else(|| io::Error::other("the put-back's record cannot be read"))?;
        let (kept, set_aside) = (self.folder.join(KEPT), self.folder.join(SET_ASIDE));
        let ours = |dir: &Path| -> io::Result<BTreeSet<(u64, u64)>> {
            names_in(dir)?
                .iter()
                .map(|n| dir.join(n).symlink_metadata().map(|m| (m.dev(), m.ino())))
                .collect()
        };
        let (kept_files, set_aside_files) = (ours(&kept)?, ours(&set_aside)?);
        let now = Fingerprint::of(&self.db)?;
        let accounted = now.0.iter().all(|(name, dev, ino, len)| {
            let file = (*dev, *ino);
            began.0.contains(&(name.clone(), *dev, *ino, *len))
                || kept_files.contains(&file)
                || set_aside_files.contains(&file)
        });
        if !accounted {
            return Err(changed());
        }
        self.finish_put_back()
    }

    /// Puts the database back whatever it holds now (`upgrade --undo`: the operator's call).
    pub fn put_back_anyway(&self) -> Result<(), Failure> {
        if !self.putting_back() {
            let as_is = Fingerprint::of(&self.db)?;
            return self.put_back(&as_is);
        }
        self.finish_put_back()
    }

    fn finish_put_back(&self) -> Result<(), Failure> {
        if let Some(why) = self.kept_incomplete()? {
            return Err(io::Error::other(format!(
                "the way back cannot put the database back whole: {why}. Nothing put back;                  the database is as LevelDB left it (`leveldb-bloom verify` says what it                  reads): to keep it, remove the folder"
            ))
            .into());
        }
        let (kept, set_aside) = (self.folder.join(KEPT), self.folder.join(SET_ASIDE));
        let kept_names = names_in(&kept)?;
        let current = OsString::from("CURRENT");
        for name in kept_names
            .iter()
            .filter(|n| **n != current)
            .chain(kept_names.get(&current))
        {
            self.restore(&kept.join(name), name)?;
        }
        sync_dir(&self.db)?;
        for name in self.database_files()? {
            if !kept_names.contains(&name) {
                fs::remove_file(self.db.join(&name))?;
            }
        }
        for name in names_in(&set_aside)? {
            self.restore(&set_aside.join(&name), &name)?;
        }
        sync_dir(&self.db)?;
        Ok(self.discard()?)
    }

    /// Makes `db/name` the file `kept` is (the same inode), atomically.
    fn restore(&self, kept: &Path, name: &OsString) -> io::Result<()> {
        let into = self.db.join(name);
        let same = |a: &fs::Metadata, b: &fs::Metadata| a.dev() == b.dev() && a.ino() == b.ino();
        if let (Ok(a), Ok(b)) = (into.symlink_metadata(), kept.symlink_metadata())
            && same(&a, &b)
        {
            return Ok(());
        }
        let scratch = self.folder.join(RESTORING);
        match fs::remove_file(&scratch) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs::hard_link(kept, &scratch)?;
        fs::rename(&scratch, &into)
    }

    /// Removes the way back (the upgrade is proven, or the database put back): renamed
    /// first, in one step, so that an interrupted removal is never found again.
    pub fn discard(&self) -> io::Result<()> {
        Self::clear_discarded(&self.db)?;
        fs::rename(&self.folder, self.db.join(DISCARDED))?;
        sync_dir(&self.db)?;
        Self::clear_discarded(&self.db)
    }

    /// The name a way back in `db` has while it is being removed.
    pub fn discarded(db: &Path) -> PathBuf {
        db.join(DISCARDED)
    }

    /// Finishes removing a way back whose removal was cut short, if one was.
    pub fn clear_discarded(db: &Path) -> io::Result<()> {
        let discarded = db.join(DISCARDED);
        match discarded.symlink_metadata() {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&discarded)?,
            Ok(_) => fs::remove_file(&discarded)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
        sync_dir(db)
    }
}

/// The names in the database directory `db` that are files of it (everything but
/// directories and `LOCK`, which the command holds).
fn database_files(db: &Path) -> io::Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(db)? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_dir() || name == "LOCK" {
            continue;
        }
        names.push(name);
    }
    Ok(names)
}

/// The `made` record: each file of `kept` as its length, a space and its name, each ended
/// by a NUL (which no file name holds).
fn listing(kept: &Path) -> io::Result<Vec<u8>> {
    let mut text = Vec::new();
    for name in names_in(kept)? {
        let len = kept.join(&name).symlink_metadata()?.len();
        text.extend_from_slice(format!("{len} ").as_bytes());
        text.extend_from_slice(name.as_bytes());
        text.push(0);
    }
    Ok(text)
}

fn names_in(dir: &Path) -> io::Result<BTreeSet<OsString>> {
    match fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.map(|e| e.file_name())).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(e) => Err(e),
    }
}

/// Makes a directory's entries durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// What LevelDB's iterator reads of a whole database: how many records, and a hash of every
/// key and value in order (each length-prefixed), so that two readings are equal only if
/// they read the same records, in the same order, with the same values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    pub records: u64,
    pub hash: u128,
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} records, hash {:032x}", self.records, self.hash)
    }
}

impl std::str::FromStr for Digest {
    type Err = ();

    /// What [`Digest`]'s `Display` wrote.
    fn from_str(text: &str) -> Result<Digest, ()> {
        let (records, hash) = text.trim_end().split_once(" records, hash ").ok_or(())?;
        Ok(Digest {
            records: records.parse().map_err(drop)?,
            hash: u128::from_str_radix(hash, 16).map_err(drop)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn contents(dir: &Path) -> BTreeMap<OsString, Vec<u8>> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| (e.file_name(), fs::read(e.path()).unwrap()))
            .collect()
    }

    #[test]
    fn what_leveldb_may_create_is_set_aside_and_everything_comes_back() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path();
        for (name, text) in [
            ("CURRENT", "MANIFEST-000002\n"),
            ("MANIFEST-000002", "manifest"),
            ("000003.ldb", "live table"),
            (
                "000009.ldb",
                "a table a crash left, numbered past next_file",
            ),
            ("000007.log", "a live log numbered past next_file"),
            ("LOG", "info"),
        ] {
            fs::write(db.join(name), text).unwrap();
        }
        let original = contents(db);
        let way_back = WayBack::make(db, 5).unwrap();
        assert!(way_back.whole() && !db.join("000009.ldb").exists());
        assert!(db.join("000007.log").exists());
        // What LevelDB does: new files (one under the set-aside name), old ones deleted,
        // CURRENT and LOG replaced by rename.
        fs::write(db.join("MANIFEST-000005"), "new manifest").unwrap();
        fs::write(db.join("000009.ldb"), "a new table").unwrap();
        fs::remove_file(db.join("000003.ldb")).unwrap();
        fs::remove_file(db.join("000007.log")).unwrap();
        fs::write(db.join("CURRENT.tmp"), "MANIFEST-000005\n").unwrap();
        fs::rename(db.join("CURRENT.tmp"), db.join("CURRENT")).unwrap();
        fs::rename(db.join("LOG"), db.join("LOG.old")).unwrap();
        let as_left = Fingerprint::of(db).unwrap();
        // Another process's write since: nothing is touched.
        fs::write(db.join("000010.log"), "another process").unwrap();
        assert_eq!(
            way_back.put_back(&as_left).map_err(|e| e.kind()),
            Err(Kind::Changed)
        );
        fs::remove_file(db.join("000010.log")).unwrap();
        way_back.put_back(&as_left).unwrap();
        assert_eq!(contents(db), original);
        assert!(matches!(WayBack::found(db), Found::Nothing));
    }

    #[test]
    fn an_interrupted_put_back_is_finished_and_a_discarded_one_never_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path();
        fs::write(db.join("CURRENT"), "MANIFEST-000002\n").unwrap();
        fs::write(db.join("000003.ldb"), "table").unwrap();
        let original = contents(db);
        let way_back = WayBack::make(db, 5).unwrap();
        fs::remove_file(db.join("000003.ldb")).unwrap();
        fs::write(db.join("000006.ldb"), "new").unwrap();
        // Put back as far as its first restore, then stopped.
        way_back
            .begin_put_back(&Fingerprint::of(db).unwrap())
            .unwrap();
        way_back
            .restore(
                &way_back.folder.join(KEPT).join("000003.ldb"),
                &"000003.ldb".into(),
            )
            .unwrap();
        let Found::WayBack(found) = WayBack::found(db) else {
            panic!("the way back is found");
        };
        assert!(found.putting_back() && found.whole());
        found.resume_put_back().unwrap();
        assert_eq!(contents(db), original);
        // A way back whose removal was cut short is no longer found, and goes at the next
        // clearing.
        let way_back = WayBack::make(db, 5).unwrap();
        fs::rename(&way_back.folder, db.join(DISCARDED)).unwrap();
        assert!(matches!(WayBack::found(db), Found::Nothing));
        WayBack::clear_discarded(db).unwrap();
        assert!(!db.join(DISCARDED).exists());
        assert_eq!(contents(db), original);
    }
}
