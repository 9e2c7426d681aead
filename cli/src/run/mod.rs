//! `run`: a program with the drop-in preloaded, in the way of `eatmydata` and `faketime`,
//! and what the drop-in did in it said at exit.
//!
//! The drop-in (`libleveldb_bloom_dropin.so`, found beside the command or named by
//! `--dropin`) goes first in `LD_PRELOAD`, which every process the program starts inherits
//! (a shell script's programs, `python app.py`, a server's forks); each process that loads it
//! writes its statistics to a file of its own (`LEVELDB_BLOOM_STATS_FILE` with `%p`) in a
//! private folder, read back and summed when the program ends. The program's standard
//! streams are its own; a signal sent to the command (not one the terminal sends the whole
//! group) is passed on; the command exits with the program's status, 128 + n for a program
//! killed by signal n. Where a preload cannot reach (a statically linked program, a
//! set-user-ID or set-group-ID one, whose loader ignores `LD_PRELOAD`), it says so and runs
//! the program anyway.
//!
//! The steps are each a module: which drop-in to preload ([`preload`]), whether a preload
//! reaches the program ([`loader`]), starting it ([`spawn`]) with what the caller gave at
//! start ([`caller`]), passing signals on while it runs ([`signals`]), summing the
//! statistics ([`summary`], [`savings`]) and saying them ([`said`]).

mod caller;
mod loader;
mod preload;
mod said;
mod savings;
mod signals;
mod spawn;
mod summary;

use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;

use leveldb_bloom::Format;

pub use caller::record_at_start;
pub use summary::Summary;

use crate::failure::{ERROR, Failure, Kind};
use crate::files::shown;
use said::say;
use spawn::Launch;

/// What `run` is asked.
#[derive(clap::Args)]
pub struct Run {
    /// The format of the filters the drop-in builds (default: LEVELDB_BLOOM_FORMAT, else
    /// bloom).
    #[arg(long, value_parser = crate::format_arg::format_parser())]
    pub format: Option<Format>,
    /// Bits per key of the filters (default: what the program asks for).
    #[arg(long)]
    pub bits_per_key: Option<f64>,
    /// The drop-in to preload.
    #[arg(long)]
    pub dropin: Option<PathBuf>,
    /// Also write the summary as JSON to this file.
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// The summary as JSON (on standard error).
    #[arg(long)]
    pub json: bool,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<OsString>,
}

/// `run [--format F] [--bits-per-key N] [--dropin PATH] [--stats FILE|--json] -- PROGRAM`.
pub fn run(request: Run) -> Result<u8, Failure> {
    let Some(name) = request.program.first() else {
        return Err(Failure::new(Kind::Usage, "run: no program given"));
    };
    let dropin = preload::dropin(request.dropin.clone())?;
    check_bits_per_key(&request)?;
    let Some(program) = spawn::find_program(name) else {
        say(&format!("{}: command not found", name.to_string_lossy()));
        let summary = Summary {
            status: 127,
            ..Summary::default()
        };
        report(&request, &summary, name);
        return Ok(summary.status);
    };
    // The statistics' folder; without one the program still runs, unsummed.
    let folder = summary::statistics_folder();
    if folder.is_none() {
        say("no folder for the statistics (TMPDIR, /tmp, /dev/shm): the program runs, unsummed");
    }
    let preload = preload::ld_preload(&dropin, folder.as_ref().map(|f| f.path()))?;
    let unreached = loader::unreachable(&program, 0);
    let launch = Launch {
        preload: unreached
            .as_ref()
            .is_none_or(|u| u.preload)
            .then_some(preload.as_os_str()),
        statistics_file: folder.as_ref().map(|f| f.path().join("stats.%p")),
        format: request.format,
        bits_per_key: request.bits_per_key,
    };
    let mut summary = Summary {
        unreachable: unreached.map(|u| u.why),
        ..Summary::default()
    };
    signals::pass_signals_on();
    let child = match spawn::spawn(&program, name, &request.program[1..], &launch) {
        Ok(child) => child,
        Err(e) => {
            say(&format!("{}: {e}", shown(&program)));
            summary.status = match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                _ => 126,
            };
            report(&request, &summary, name);
            return Ok(summary.status);
        }
    };
    let status = signals::wait_for(child)
        .map_err(|e| Failure::new(Kind::Io, format!("run: waiting for the program: {e}")))?;
    summary.status = exit_status(status);
    summary.signal = status.signal();
    if let Some(folder) = &folder {
        summary::summarize(folder.path(), &mut summary);
    }
    report(&request, &summary, name);
    drop(folder);
    if let Some(signal) = status.signal() {
        signals::die_by(signal);
    }
    Ok(summary.status)
}

/// The summary of the program `name`, where and as `request` asks for it.
fn report(request: &Run, summary: &Summary, name: &OsStr) {
    said::report(
        summary,
        &name.to_string_lossy(),
        request.stats.as_deref(),
        request.json,
    );
}

/// Refuses a `--bits-per-key` that the format the drop-in will build does not take, before
/// the program runs.
fn check_bits_per_key(request: &Run) -> Result<(), Failure> {
    let Some(bits) = request.bits_per_key else {
        return Ok(());
    };
    // As the drop-in reads the variable: a value it does not know is Bloom.
    let format = request.format.or_else(|| {
        let named = std::env::var("LEVELDB_BLOOM_FORMAT").ok()?;
        Format::from_name(&named)
    });
    let format = format.unwrap_or(Format::Bloom);
    if format.policy(bits).is_err() {
        return Err(Failure::new(
            Kind::Usage,
            format!(
                "run: --bits-per-key {bits:?}: {} filters take {}",
                format.name(),
                format.settings()
            ),
        ));
    }
    Ok(())
}

/// The program's exit status as a shell gives it: 128 + n for a program killed by signal n.
fn exit_status(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        _ => ERROR,
    }
}
