//! Every lock a writer of a LevelDB database takes on its `LOCK` file, taken before the
//! command reads anything, so that it never reads a database another process is changing.
//! Writers lock the file in two ways that Linux keeps apart (neither conflicts with the
//! other): LevelDB's C++ with an fcntl write lock (`util/env_posix.cc`, `LockOrUnlock`),
//! goleveldb (go-ethereum, most Go programs) with `flock(2)` (`leveldb/storage/
//! file_storage_unix.go`, `setFileLock`). The command takes both, and either one held
//! elsewhere means the database is in use.
//!
//! `verify` and `inspect` take shared locks (they conflict with a writer's exclusive lock,
//! need no write access, and keep a writer from opening the database meanwhile); `upgrade`
//! takes exclusive ones. fcntl locks belong to the process: LevelDB, opened by this process
//! while the lock is held, takes it too, and releases it for the whole process when it
//! closes the database ([`DatabaseLock::retake`] takes it back). The flock belongs to the
//! command's own open file and stays held throughout.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::failure::{Failure, Kind};
use crate::files::shown;

/// A held lock on a database (none when the database has no `LOCK` file and the lock is
/// only read: no process has ever had it open here).
#[derive(Debug)]
pub struct DatabaseLock {
    dir: PathBuf,
    file: Option<File>,
    write: bool,
}

impl DatabaseLock {
    /// A read lock on the database in `dir`. A `LOCK` that is a directory fails as it fails
    /// LevelDB, which opens it read-write ("Is a directory"): no LevelDB opens the database.
    /// Fails as [`Kind::InUse`] where another process holds the lock.
    pub fn read(dir: &Path) -> Result<DatabaseLock, Failure> {
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(dir.join("LOCK"));
        let cannot = |e| cannot_lock(dir, false, e);
        match opened {
            Ok(file) if file.metadata().map_err(cannot)?.is_dir() => {
                Err(cannot(io::Error::from_raw_os_error(libc::EISDIR)))
            }
            Ok(file) => Self::take(dir, Some(file), false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Self::take(dir, None, false),
            Err(e) => Err(cannot(e)),
        }
    }

    /// The write lock on the database in `dir`, creating `LOCK` as LevelDB does. Fails as
    /// [`Kind::InUse`] where another process holds the lock.
    pub fn write(dir: &Path) -> Result<DatabaseLock, Failure> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(dir.join("LOCK"))
            .map_err(|e| cannot_lock(dir, true, e))?;
        Self::take(dir, Some(file), true)
    }

    fn take(dir: &Path, file: Option<File>, write: bool) -> Result<DatabaseLock, Failure> {
        let lock = DatabaseLock {
            dir: dir.to_path_buf(),
            file,
            write,
        };
        if let Some(file) = &lock.file {
            let how = if write { libc::LOCK_EX } else { libc::LOCK_SH };
            // SAFETY: `file` is open for the whole call.
            if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } != 0 {
                return Err(lock.refused());
            }
        }
        lock.retake()?;
        Ok(lock)
    }

    /// What a lock call's failure means: another holder, or an I/O error.
    fn refused(&self) -> Failure {
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EACCES) => Failure::at(
                &self.dir,
                Kind::InUse,
                "in use: another process has the database open; close it and run again",
            ),
            _ => cannot_lock(&self.dir, self.write, e),
        }
    }

    /// Takes the lock again (after LevelDB, opened by this process, closed the database and
    /// so released it).
    pub fn retake(&self) -> Result<(), Failure> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        // SAFETY: an all-zero `flock` is a valid value of the plain C struct.
        let mut request: libc::flock = unsafe { std::mem::zeroed() };
        request.l_type = if self.write {
            libc::F_WRLCK
        } else {
            libc::F_RDLCK
        } as libc::c_short;
        request.l_whence = libc::SEEK_SET as libc::c_short;
        // SAFETY: `file` is open for the whole call and `request` a valid flock struct.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &request) } == 0 {
            return Ok(());
        }
        Err(self.refused())
    }
}

/// What to say of the lock on the database in `dir` (`write`: the write lock, which only
/// `upgrade` takes) that the system's error `e` kept the command from taking.
fn cannot_lock(dir: &Path, write: bool, e: io::Error) -> Failure {
    let lock = shown(&dir.join("LOCK"));
    let what = if write && e.raw_os_error() == Some(libc::EROFS) {
        "on a read-only file system; nothing rewritten".to_owned()
    } else if write {
        format!("cannot take LevelDB's lock to rewrite it ({lock}: {e}); nothing rewritten")
    } else {
        format!(
            "cannot take LevelDB's lock ({lock}: {e}){}",
            if e.raw_os_error() == Some(libc::EISDIR) {
                "; no LevelDB can open the database while it is so"
            } else {
                ""
            }
        )
    };
    Failure::at(dir, Kind::Io, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether another process could take the write lock on `dir/LOCK` now (F_GETLK asks
    /// on behalf of this process, so a child answers).
    fn another_process_could_lock(dir: &Path) -> bool {
        // SAFETY: fork in a test process; the child only calls async-signal-safe functions
        // (open, fcntl, _exit) before exiting.
        unsafe {
            let path = std::ffi::CString::new(dir.join("LOCK").as_os_str().as_encoded_bytes())
                .expect("no NUL");
            match libc::fork() {
                0 => {
                    let fd = libc::open(path.as_ptr(), libc::O_RDWR);
                    let mut request: libc::flock = std::mem::zeroed();
                    request.l_type = libc::F_WRLCK as libc::c_short;
                    let ok = fd >= 0 && libc::fcntl(fd, libc::F_SETLK, &request) == 0;
                    libc::_exit(i32::from(!ok));
                }
                child => {
                    let mut status = 0;
                    libc::waitpid(child, &mut status, 0);
                    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
                }
            }
        }
    }

    /// Whether another open file could take an exclusive flock on `dir/LOCK` now (flocks
    /// belong to open files, so this process answers for any other).
    fn another_file_could_flock(dir: &Path) -> bool {
        let file = File::open(dir.join("LOCK")).unwrap();
        // SAFETY: `file` is open for the whole call.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    }

    #[test]
    fn a_writer_holding_either_lock_makes_the_database_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let write = DatabaseLock::write(dir.path()).unwrap();
        assert!(!another_file_could_flock(dir.path()));
        drop(write);
        // A goleveldb writer: flock only.
        let writer = File::open(dir.path().join("LOCK")).unwrap();
        // SAFETY: `writer` is open for the whole call.
        assert_eq!(unsafe { libc::flock(writer.as_raw_fd(), libc::LOCK_EX) }, 0);
        assert_eq!(
            DatabaseLock::read(dir.path()).unwrap_err().kind(),
            Kind::InUse
        );
        assert_eq!(
            DatabaseLock::write(dir.path()).unwrap_err().kind(),
            Kind::InUse
        );
        drop(writer);
        assert!(DatabaseLock::write(dir.path()).is_ok());
    }

    #[test]
    fn a_lock_that_is_a_directory_fails_as_it_fails_leveldb() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("LOCK")).unwrap();
        for taken in [
            DatabaseLock::read(dir.path()),
            DatabaseLock::write(dir.path()),
        ] {
            assert!(
                matches!(&taken, Err(e) if e.kind() == Kind::Io
                    && e.to_string().contains("Is a directory")),
                "{taken:?}"
            );
        }
    }

    #[test]
    fn a_held_lock_keeps_other_processes_out_and_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        // No LOCK file: nothing to lock against, and nothing is created by reading.
        let read = DatabaseLock::read(dir.path()).unwrap();
        assert!(read.file.is_none() && !dir.path().join("LOCK").exists());
        drop(read);
        let write = DatabaseLock::write(dir.path()).unwrap();
        assert!(!another_process_could_lock(dir.path()));
        drop(write);
        assert!(another_process_could_lock(dir.path()));
        let read = DatabaseLock::read(dir.path()).unwrap();
        assert!(!another_process_could_lock(dir.path()));
        drop(read);
    }
}
