//! What a command's PATH names: a database directory (its current version's tables and
//! logs, read under LevelDB's lock) or one table file.

use std::path::{Path, PathBuf};

use crate::failure::{Failure, Kind};
use crate::manifest;
use crate::report::Keys;

/// The tables a PATH names, each with what the MANIFEST says of it (for a database).
pub(crate) struct Target {
    pub(crate) tables: Vec<(PathBuf, Option<manifest::LiveTable>)>,
    pub(crate) not_live: Vec<PathBuf>,
    /// The write-ahead logs recovery replays (a database's).
    pub(crate) logs: Vec<PathBuf>,
    /// The current version (a database's), its tables taken into `tables`.
    pub(crate) version: Option<manifest::Version>,
    /// `None`: as each table's keys show ([`crate::report::keys_of`]).
    pub(crate) keys: Option<Keys>,
}

impl Target {
    /// The tables of `path`: the current version's (a database directory when `database`),
    /// or the one table file.
    pub(crate) fn of(path: &Path, database: bool, keys: Option<Keys>) -> Result<Target, Failure> {
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
            return Err(Failure::at(
                path,
                Kind::Usage,
                "a database's tables hold internal keys; --keys user is for a table file \
                 written with LevelDB's TableBuilder",
            ));
        }
        let version = manifest::current_version(path)?;
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
}

/// Whether `path` is a database directory (`Err` when it is a directory that is not one).
pub(crate) fn is_database_dir(path: &Path) -> Result<bool, Failure> {
    let meta = std::fs::metadata(path).map_err(|e| Failure::from(e).within(path))?;
    if meta.is_dir() && !manifest::is_database(path) {
        return Err(Failure::at(
            path,
            Kind::Usage,
            "not a LevelDB database (no CURRENT file)",
        ));
    }
    Ok(meta.is_dir())
}
