//! The drop-in `run` preloads: which file (named, or found beside the command), and the
//! `LD_PRELOAD` value that names it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::said::say;
use crate::failure::{Failure, Kind};
use crate::files::shown;

/// The drop-in's file name.
const DROPIN: &str = "libleveldb_bloom_dropin.so";

/// The drop-in to preload: the one named (`--dropin`), else the one beside the command;
/// its whole path.
pub(super) fn dropin(named: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let dropin = match named.or_else(dropin_beside_command) {
        Some(dropin) if dropin.is_file() => dropin,
        Some(dropin) => {
            return Err(Failure::at(&dropin, Kind::NotFound, "no such file"));
        }
        None => {
            return Err(Failure::new(
                Kind::Usage,
                format!(
                    "run: {DROPIN} is not beside the command (its folder, or its prefix's lib); \
                 name it with --dropin"
                ),
            ));
        }
    };
    dropin
        .canonicalize()
        .map_err(|e| Failure::from(e).within(&dropin))
}

/// The drop-in beside the command: in its folder, or the `lib` folders of its prefix.
fn dropin_beside_command() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    let dir = exe.parent()?;
    let mut candidates = vec![dir.join(DROPIN)];
    if let Some(prefix) = dir.parent() {
        candidates.push(prefix.join("lib").join(DROPIN));
        candidates.push(prefix.join("lib64").join(DROPIN));
        if let Ok(entries) = std::fs::read_dir(prefix.join("lib")) {
            let mut multiarch: Vec<PathBuf> =
                entries.flatten().map(|e| e.path().join(DROPIN)).collect();
            multiarch.sort();
            candidates.extend(multiarch);
        }
    }
    candidates.into_iter().find(|c| c.is_file())
}

/// `LD_PRELOAD` for the program: the drop-in first, then what the caller preloads.
/// LD_PRELOAD splits at spaces and colons: a drop-in path holding one is linked in the
/// statistics' `folder` under a name without.
pub(super) fn ld_preload(dropin: &Path, folder: Option<&Path>) -> Result<OsString, Failure> {
    let preloaded = match folder {
        Some(folder) if splits_ld_preload(dropin) => {
            let link = folder.join(DROPIN);
            std::os::unix::fs::symlink(dropin, &link)
                .map_err(|e| Failure::from(e).within(&link))?;
            say(&format!(
                "{}: LD_PRELOAD cannot name a path with a space or colon; preloading a link \
                 to it that goes when the command ends, so a process the program leaves \
                 running loses the drop-in at its next exec",
                shown(dropin)
            ));
            link
        }
        _ => dropin.to_path_buf(),
    };
    if splits_ld_preload(&preloaded) {
        return Err(Failure::at(
            &preloaded,
            Kind::Usage,
            "LD_PRELOAD cannot name a path with a space or colon",
        ));
    }
    Ok(match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut value = preloaded.into_os_string();
            value.push(":");
            value.push(old);
            value
        }
        _ => preloaded.into_os_string(),
    })
}

/// Whether `path` holds a character at which LD_PRELOAD splits its list.
fn splits_ld_preload(path: &Path) -> bool {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| b" :\t\n".contains(b))
}
