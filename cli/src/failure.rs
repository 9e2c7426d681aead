//! How a command ends: its exit status, the [`Failure`] that ends it early (the crate's one
//! error type), and what it writes to standard output ([`emit`]).

use std::fmt;
use std::io;
use std::path::Path;

/// All is well.
pub const OK: u8 = 0;
/// A check found a problem.
pub const PROBLEM: u8 = 1;
/// Usage or I/O error.
pub const ERROR: u8 = 2;

/// Why something the command does failed: what kind of failure it is (what callers decide
/// by, and what sets the exit status), where (a path, or an offset in the file read), and
/// what the module that met it says of it. The message is made where its facts are; a
/// caller that knows more says it around the failure ([`Failure::within`],
/// [`Failure::and`]), keeping its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    kind: Kind,
    place: Option<Place>,
    what: String,
    disk_full: bool,
}

/// What kind of failure a [`Failure`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The command was asked what it does not do (a path that is not a database, an option
    /// out of range, a build without LevelDB).
    Usage,
    /// The system failed a read or a write, or refused it.
    Io,
    /// There is no such file.
    NotFound,
    /// Something other than a regular file is there: what it is.
    NotRegular(&'static str),
    /// The bytes read are not what LevelDB writes, or LevelDB would refuse or lose them:
    /// damage, which the command does not read past or hand to LevelDB.
    Damaged,
    /// A database this tool does not read (its keys in another comparator's order).
    Foreign,
    /// Another process holds the database's lock: the database is in use.
    InUse,
    /// LevelDB found the database damaged (its `Status::Corruption`).
    Corruption,
    /// Another error LevelDB reported, or a call to LevelDB that could not be made.
    LevelDb,
    /// The database's files changed after the command last held it (another process
    /// wrote): nothing was touched.
    Changed,
    /// The upgrade did not finish: the database is put back, or its way back is kept.
    Unfinished,
}

/// Where a failure is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// A path, as the command prints it.
    Path(String),
    /// A byte offset in the file read.
    Offset(u64),
}

impl Failure {
    /// A failure of `kind` that `what` says in full.
    pub fn new(kind: Kind, what: impl Into<String>) -> Failure {
        Failure {
            kind,
            place: None,
            what: what.into(),
            disk_full: false,
        }
    }

    /// A failure of `kind` at `path`: said as "PATH: WHAT".
    pub fn at(path: &Path, kind: Kind, what: impl Into<String>) -> Failure {
        Failure {
            place: Some(Place::Path(shown(path))),
            ..Failure::new(kind, what)
        }
    }

    /// A failure of `kind` at byte `offset` of the file read: said as "at offset N: WHAT".
    pub fn at_offset(offset: u64, kind: Kind, what: impl Into<String>) -> Failure {
        Failure {
            place: Some(Place::Offset(offset)),
            ..Failure::new(kind, what)
        }
    }

    /// This failure, said within `path`'s ("PATH: " before all it says).
    pub fn within(self, path: &Path) -> Failure {
        Failure {
            what: self.to_string(),
            place: Some(Place::Path(shown(path))),
            ..self
        }
    }

    /// This failure with `more` said after it.
    pub fn and(mut self, more: &str) -> Failure {
        self.what.push_str(more);
        self
    }

    /// This failure, of another kind: what the caller knows it to mean (a missing file of
    /// the database is damage).
    pub fn with_kind(self, kind: Kind) -> Failure {
        Failure { kind, ..self }
    }

    /// This failure, made of `cause`: what `cause` said of the disk carries over.
    pub fn caused_by(mut self, cause: &Failure) -> Failure {
        self.disk_full |= cause.disk_full;
        self
    }

    /// This failure, marked as said of a full disk (or quota) where `full`.
    pub(crate) fn with_disk_full(mut self, full: bool) -> Failure {
        self.disk_full |= full;
        self
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The exit status the failure ends the command with.
    pub fn status(&self) -> u8 {
        match self.kind {
            Kind::Damaged | Kind::Corruption | Kind::Unfinished => PROBLEM,
            Kind::Usage
            | Kind::Io
            | Kind::NotFound
            | Kind::NotRegular(_)
            | Kind::Foreign
            | Kind::InUse
            | Kind::LevelDb
            | Kind::Changed => ERROR,
        }
    }

    /// What the failure says, without its place.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The byte offset it is at, for a failure in a file's bytes.
    pub fn offset(&self) -> Option<u64> {
        match self.place {
            Some(Place::Offset(offset)) => Some(offset),
            _ => None,
        }
    }

    /// Whether it comes of a full disk or quota (then the way on starts with making room).
    pub fn disk_full(&self) -> bool {
        self.disk_full
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.place {
            Some(Place::Path(path)) => write!(f, "{path}: {}", self.what),
            Some(Place::Offset(offset)) => write!(f, "at offset {offset}: {}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for Failure {}

/// The system's error as it says it (the caller names the file, where the system does not).
impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        let full = matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT));
        Failure::new(Kind::Io, e.to_string()).with_disk_full(full)
    }
}

/// Writes `text` to standard output. A reader that went away (`| head`) only ends the
/// output; any other write error is a failure.
pub(crate) fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::new(Kind::Io, format!("writing the output: {e}")))
        }
        _ => Ok(()),
    }
}

/// A path as the command prints it: control characters (a terminal's escape sequences
/// among them) escaped, bytes that are not UTF-8 replaced.
pub fn shown(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
