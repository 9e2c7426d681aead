//! Starting the program as a shell would (found in `PATH`, a file without `#!` run by
//! `/bin/sh`), with the drop-in's variables and what the caller gave at start.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use leveldb_bloom::Format;

use super::caller;

/// What the program's processes are given besides their arguments.
pub(super) struct Launch<'a> {
    /// `LD_PRELOAD`, where the preload is set.
    pub(super) preload: Option<&'a OsStr>,
    /// `LEVELDB_BLOOM_STATS_FILE`, where there is a folder for the statistics.
    pub(super) statistics_file: Option<PathBuf>,
    pub(super) format: Option<Format>,
    pub(super) bits_per_key: Option<f64>,
}

/// The program as `execvp` finds it: a name with a slash as it is, else the first
/// executable file of that name in `PATH`.
pub(super) fn find_program(name: &OsStr) -> Option<PathBuf> {
    if name.as_encoded_bytes().contains(&b'/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Starts `program` with `args`, under the name it was given (`name`).
pub(super) fn spawn(
    program: &Path,
    name: &OsStr,
    args: &[OsString],
    launch: &Launch,
) -> std::io::Result<Child> {
    command(program, name, args, launch).spawn().or_else(|e| {
        // A file without "#!" that the kernel will not run is a shell script, as execvp and
        // every shell take it.
        if e.raw_os_error() == Some(libc::ENOEXEC) {
            let mut script_args = vec![program.to_path_buf().into_os_string()];
            script_args.extend_from_slice(args);
            command(Path::new("/bin/sh"), OsStr::new("sh"), &script_args, launch).spawn()
        } else {
            Err(e)
        }
    })
}

fn command(path: &Path, arg0: &OsStr, args: &[OsString], launch: &Launch) -> Command {
    let mut command = Command::new(path);
    // The program sees the name it was given, as a shell gives it.
    std::os::unix::process::CommandExt::arg0(&mut command, arg0);
    command.args(args);
    if let Some(preload) = launch.preload {
        command.env("LD_PRELOAD", preload);
    }
    if let Some(file) = &launch.statistics_file {
        command.env("LEVELDB_BLOOM_STATS_FILE", file);
    }
    if let Some(format) = launch.format {
        command.env("LEVELDB_BLOOM_FORMAT", format.name());
    }
    if let Some(bits) = launch.bits_per_key {
        // -0 is 0.
        command.env("LEVELDB_BLOOM_BITS_PER_KEY", (bits + 0.0).to_string());
    }
    caller::given_back_in(&mut command);
    command
}
