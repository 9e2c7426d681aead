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

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

use serde::Serialize;

use crate::failure::{ERROR, Failure};
use crate::files::shown;
use leveldb_bloom::Format;
use leveldb_bloom_dropin_statistics::Statistics;

/// The drop-in's file name.
const DROPIN: &str = "libleveldb_bloom_dropin.so";

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

/// What the drop-in did in every process of the program, summed.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// The program's exit status (128 + n for signal n).
    pub status: u8,
    /// Why a preload cannot reach the program, if it cannot.
    pub unreachable: Option<String>,
    /// Processes whose drop-in wrote its statistics (at exit: a process that ends with
    /// `_exit` or a signal writes none).
    pub processes: u64,
    /// The format its policies built, as the processes said.
    pub format: Option<String>,
    /// The bits per key the drop-in was told (`--bits-per-key`); null where the program's
    /// own were used (or no process reported).
    pub bits_per_key: Option<f64>,
    /// `NewBloomFilterPolicy` calls answered: with the drop-in's policy, with the LevelDB's
    /// own (declined), with none (refused).
    pub policies_served: u64,
    pub policies_declined: u64,
    pub policies_refused: u64,
    /// The LevelDBs served, each with whose code writes its filters.
    pub served: Vec<String>,
    /// The LevelDBs declined, each with why.
    pub declined: Vec<String>,
    /// Why policies were refused.
    pub refused: Vec<String>,
    pub filters_built: u64,
    pub keys_added: u64,
    pub queries: u64,
    pub no_match: u64,
    /// For compact filters at a known bits per key: table reads saved against Bloom
    /// filters of the same size (absent keys Bloom's expected rate would let through,
    /// less those compact filters let through).
    pub table_reads_saved: Option<u64>,
}

/// The program's process, for the signal handler (0: none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal sent to the command before the program's process existed, to pass on once it
/// does (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// What the caller gave the command before Rust's runtime started, which the runtime then
/// changes: the standard streams it had closed (bit n: fd n; the runtime opens /dev/null on
/// them) and whether SIGPIPE was ignored (the runtime ignores it, and spawning restores the
/// default). The program gets them as the caller gave them.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);
static SIGPIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// Records the caller's standard streams and SIGPIPE disposition; called by the command's
/// binary from its `.init_array`, before Rust's runtime starts (`main.rs`).
pub extern "C" fn record_at_start() {
    for fd in 0..3 {
        // SAFETY: F_GETFD on any number only asks.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            CLOSED_AT_START.fetch_or(1 << fd, Ordering::Relaxed);
        }
    }
    // SAFETY: a zeroed sigaction is valid; a NULL new action only asks.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
        {
            SIGPIPE_IGNORED_AT_START.store(true, Ordering::Relaxed);
        }
    }
}

extern "C" fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // A signal a process sent the command (kill, sigqueue, tgkill) is passed on.
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    // A code above zero is the kernel's. What the terminal sends (Ctrl-C, Ctrl-\) reaches
    // the program's group too, so it is not sent twice; but a hangup reaches only the
    // session's leader, which the command may be (`ssh -t host leveldb-bloom run ...`).
    // SAFETY: getsid and getpid are async-signal-safe.
    let leader = unsafe { libc::getsid(0) == libc::getpid() };
    if code > 0 && !(signal == libc::SIGHUP && leader) {
        return;
    }
    let child = CHILD.load(Ordering::Relaxed);
    if child > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(child, signal) };
    } else {
        PENDING.store(signal, Ordering::Relaxed);
    }
}

/// Records the program's process for the signal handler, and passes on a signal that came
/// before it existed. The handler runs on this thread (the command has no other), so it
/// ran either wholly before the store or sees the process.
fn program_started(child: i32) {
    CHILD.store(child, Ordering::Relaxed);
    let pending = PENDING.swap(0, Ordering::Relaxed);
    if pending != 0 {
        // SAFETY: the program's process, which the command has not waited for yet.
        unsafe { libc::kill(child, pending) };
    }
}

/// Catches the signals a process sends to stop or tell a program (each would end the
/// command while the program runs; a caught signal's handler is reset in the program at
/// exec), and the terminal's resizing.
fn pass_signals_on() {
    let realtime = libc::SIGRTMIN()..=libc::SIGRTMAX();
    let named = [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGWINCH,
    ];
    for signal in named.into_iter().chain(realtime) {
        // SAFETY: a zeroed sigaction is valid; the handler only calls async-signal-safe
        // functions. A signal the caller ignores stays ignored (`nohup`): the program
        // inherits that.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = pass_on as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
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

/// The program as `execvp` finds it: a name with a slash as it is, else the first
/// executable file of that name in `PATH`.
fn find_program(name: &OsStr) -> Option<PathBuf> {
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

/// The dynamic loader an ELF file's program headers name (`PT_INTERP`): `Some(None)` for a
/// statically linked one, `None` if it is not an ELF file this reads.
fn loader_named(data: &[u8]) -> Option<Option<Vec<u8>>> {
    use object::read::elf::{FileHeader, ProgramHeader};
    use object::{Endianness, elf};
    fn interp<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<Option<Vec<u8>>> {
        let header = H::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let headers = header.program_headers(endian, data).ok()?;
        Some(
            headers
                .iter()
                .find(|ph| ph.p_type(endian) == elf::PT_INTERP)
                .map(|ph| {
                    let path = ph.data(endian, data).unwrap_or_default();
                    path.split(|&b| b == 0).next().unwrap_or_default().to_vec()
                }),
        )
    }
    match object::FileKind::parse(data).ok()? {
        object::FileKind::Elf64 => interp::<elf::FileHeader64<Endianness>>(data),
        object::FileKind::Elf32 => interp::<elf::FileHeader32<Endianness>>(data),
        _ => None,
    }
}

/// Whether `loader` (a `PT_INTERP` path) is glibc's, the one loader that can preload the
/// drop-in: `ld-linux*.so.*` on most architectures, `ld64.so.*` (s390x, POWER), `ld.so.1`.
/// musl's (`ld-musl-*.so.1`) fails a program whose preload it cannot load.
fn is_glibc_loader(loader: &[u8]) -> bool {
    let name = loader.rsplit(|&b| b == b'/').next().unwrap_or(loader);
    name.starts_with(b"ld-linux") || name.starts_with(b"ld64.so.") || name == b"ld.so.1"
}

/// Why a preload cannot reach a program, and whether it may still be set for it (for the
/// programs it starts): not where the program's loader would fail on it.
struct Unreached {
    why: String,
    preload: bool,
}

/// Why a preload cannot reach `program`, if it cannot (a script is judged by its
/// interpreter).
fn unreachable(program: &Path, depth: u32) -> Option<Unreached> {
    let why = |why: String| Some(Unreached { why, preload: true });
    use std::os::unix::fs::MetadataExt;
    let meta = program.metadata().ok()?;
    let mode = meta.permissions().mode();
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // Secure execution (the loader ignoring LD_PRELOAD) when the program changes the ids.
    if (mode & 0o4000 != 0 && meta.uid() != uid) || (mode & 0o2000 != 0 && meta.gid() != gid) {
        return why(format!(
            "{} is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it",
            shown(program)
        ));
    }
    let mut head = Vec::new();
    std::fs::File::open(program)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut head)
        .ok()?;
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next()?;
        let interpreter = String::from_utf8_lossy(line);
        let interpreter = interpreter.split_whitespace().next()?;
        return (depth < 4)
            .then(|| unreachable(Path::new(interpreter), depth + 1))
            .flatten();
    }
    match loader_named(&head)? {
        None => why(format!(
            "{} is statically linked: no dynamic loader runs in it, so no preload reaches it",
            shown(program)
        )),
        Some(loader) if !is_glibc_loader(&loader) => Some(Unreached {
            why: format!(
                "{}'s dynamic loader, {}, is not glibc's (musl's, say): it cannot load the \
                 drop-in, and would not start the program with it preloaded",
                shown(program),
                String::from_utf8_lossy(&loader)
            ),
            preload: false,
        }),
        Some(_) => None,
    }
}

/// The statistics files' fields, summed over the processes.
fn summarize(folder: &Path, summary: &mut Summary) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let texts: Vec<String> = entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    let files: Vec<Statistics> = texts.iter().map(|t| Statistics::parse(t)).collect();
    let pids: std::collections::BTreeSet<u64> = files.iter().map(|f| f.pid).collect();
    for file in files {
        summary.processes += 1;
        // A forked child reports only its own work; its LevelDBs are its parent's, said
        // with the parent's (when the parent reported).
        if !file
            .forked_from
            .is_some_and(|parent| pids.contains(&parent))
        {
            for (ours, theirs) in [
                (&mut summary.served, file.served),
                (&mut summary.declined, file.declined),
                (&mut summary.refused, file.refused),
            ] {
                for line in theirs {
                    if !ours.contains(&line) {
                        ours.push(line);
                    }
                }
            }
        }
        summary.policies_served += file.policies_served;
        summary.policies_declined += file.policies_declined;
        summary.policies_refused += file.policies_refused;
        summary.filters_built += file.filters_built;
        summary.keys_added += file.keys_added;
        summary.queries += file.queries;
        summary.no_match += file.no_match;
        let used = file.dropin_policies > 0 || file.filters_built > 0;
        if used || summary.format.is_none() {
            summary.format = (!file.formats.is_empty()).then(|| {
                let names: Vec<&str> = file.formats.iter().map(|f| f.name()).collect();
                names.join(",")
            });
            summary.bits_per_key = file.bits_per_key;
        }
    }
    if summary.format.as_deref() == Some("compact")
        && let Some(bits) = summary.bits_per_key
    {
        let compact = leveldb_bloom::compact::false_positive_rate_at(bits);
        let bloom = bloom_rate_at(bits);
        // The absent keys asked: those ruled out, and the share compact filters let through.
        let absent = summary.no_match as f64 / (1.0 - compact).max(f64::MIN_POSITIVE);
        summary.table_reads_saved = Some((absent * (bloom - compact)).max(0.0).round() as u64);
    }
}

/// The false-positive rate the Bloom model expects of LevelDB's filters at `bits_per_key`
/// (whole bits, as LevelDB takes them), for 1,000 keys.
fn bloom_rate_at(bits_per_key: f64) -> f64 {
    const KEYS: usize = 1000;
    let Ok(policy) = leveldb_bloom::BloomPolicy::new(bits_per_key.round() as i32) else {
        return 1.0;
    };
    use leveldb_bloom::FilterPolicy;
    match policy.filter_len(KEYS) {
        Ok(len) if len > 1 => {
            // The model reads the filter's size and probe count only.
            let mut filter = vec![0u8; len];
            filter[len - 1] = policy.probes();
            leveldb_bloom::bloom::expected_false_positive_rate(&filter, KEYS).unwrap_or(1.0)
        }
        _ => 1.0,
    }
}

/// The summary as a person reads it.
fn said(summary: &Summary, program: &str) -> String {
    let mut text = String::new();
    let status = match summary.status {
        s if s > 128 => format!("was killed by signal {}", s - 128),
        s => format!("exited {s}"),
    };
    let _ = writeln!(text, "leveldb-bloom run: {program} {status}");
    if let Some(why) = &summary.unreachable {
        let _ = writeln!(text, "  not reached: {why}; it ran without the drop-in");
    }
    if summary.processes == 0 {
        if summary.unreachable.is_none() {
            let _ = writeln!(
                text,
                "  no process reported: none loaded the drop-in (statically linked programs \
                 only, or LD_PRELOAD cleared), or each ended without exit (_exit, a signal)"
            );
        }
        return text;
    }
    let _ = writeln!(
        text,
        "  the drop-in reported from {} {}; policies: {} served, {} declined (the LevelDB's \
         own kept), {} refused",
        summary.processes,
        if summary.processes == 1 {
            "process"
        } else {
            "processes"
        },
        summary.policies_served,
        summary.policies_declined,
        summary.policies_refused,
    );
    for line in &summary.served {
        let _ = writeln!(text, "    {line}");
    }
    for why in &summary.declined {
        let _ = writeln!(text, "    declined {why}");
    }
    for why in &summary.refused {
        let _ = writeln!(text, "    refused: {why}");
    }
    let ruled_out = if summary.queries > 0 {
        format!(
            "{} ({:.1}%)",
            summary.no_match,
            100.0 * summary.no_match as f64 / summary.queries as f64
        )
    } else {
        "0".into()
    };
    let _ = writeln!(
        text,
        "  format {} at {}: filters built {}, keys {}, queries {}, ruled out {ruled_out}",
        summary.format.as_deref().unwrap_or("?"),
        summary
            .bits_per_key
            .map_or("the program's bits per key".to_owned(), |b| format!(
                "{b} bits per key"
            )),
        summary.filters_built,
        summary.keys_added,
        summary.queries
    );
    match summary.table_reads_saved {
        Some(saved) => {
            let _ = writeln!(
                text,
                "  compact filters: about {saved} table reads saved against Bloom filters of \
                 the same size (their expected false-positive rate)"
            );
        }
        None if summary.format.as_deref() == Some("compact") => {
            let _ = writeln!(
                text,
                "  compact filters at the program's bits per key: give --bits-per-key for an \
                 estimate of the table reads saved"
            );
        }
        None => {}
    }
    text
}

/// `run [--format F] [--bits-per-key N] [--dropin PATH] [--stats FILE|--json] -- PROGRAM`.
pub fn run(request: Run) -> Result<u8, Failure> {
    let Some(name) = request.program.first() else {
        return Err(Failure::error("run: no program given"));
    };
    let dropin = match request.dropin.clone().or_else(dropin_beside_command) {
        Some(dropin) if dropin.is_file() => dropin,
        Some(dropin) => {
            return Err(Failure::error(format!("{}: no such file", shown(&dropin))));
        }
        None => {
            return Err(Failure::error(format!(
                "run: {DROPIN} is not beside the command (its folder, or its prefix's lib); \
                 name it with --dropin"
            )));
        }
    };
    let dropin = dropin
        .canonicalize()
        .map_err(|e| Failure::error(format!("{}: {e}", shown(&dropin))))?;
    if let Some(bits) = request.bits_per_key {
        // As the drop-in reads the variable: a value it does not know is Bloom.
        let format = request.format.or_else(|| {
            let named = std::env::var("LEVELDB_BLOOM_FORMAT").ok()?;
            Format::from_name(&named)
        });
        let format = format.unwrap_or(Format::Bloom);
        if format.policy(bits).is_err() {
            return Err(Failure::error(format!(
                "run: --bits-per-key {bits:?}: {} filters take {}",
                format.name(),
                format.settings()
            )));
        }
    }
    let Some(program) = find_program(name) else {
        say(&format!("{}: command not found", name.to_string_lossy()));
        let summary = Summary {
            status: 127,
            ..Summary::default()
        };
        report(&request, &summary, &name.to_string_lossy());
        return Ok(summary.status);
    };
    // The statistics' folder; without one the program still runs, unsummed.
    let folder = statistics_folder();
    if folder.is_none() {
        say("no folder for the statistics (TMPDIR, /tmp, /dev/shm): the program runs, unsummed");
    }
    // LD_PRELOAD splits at spaces and colons: a drop-in path holding one is linked in the
    // folder under a name without.
    let preloaded = match &folder {
        Some(folder)
            if dropin
                .as_os_str()
                .as_encoded_bytes()
                .iter()
                .any(|b| b" :\t\n".contains(b)) =>
        {
            let link = folder.path().join(DROPIN);
            std::os::unix::fs::symlink(&dropin, &link)
                .map_err(|e| Failure::error(format!("{}: {e}", shown(&link))))?;
            say(&format!(
                "{}: LD_PRELOAD cannot name a path with a space or colon; preloading a link \
                 to it that goes when the command ends, so a process the program leaves \
                 running loses the drop-in at its next exec",
                shown(&dropin)
            ));
            link
        }
        _ => dropin.clone(),
    };
    if preloaded
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| b" :\t\n".contains(b))
    {
        return Err(Failure::error(format!(
            "{}: LD_PRELOAD cannot name a path with a space or colon",
            shown(&preloaded)
        )));
    }
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut value = preloaded.into_os_string();
            value.push(":");
            value.push(old);
            value
        }
        _ => preloaded.into_os_string(),
    };
    let unreached = unreachable(&program, 0);
    let preloads = unreached.as_ref().is_none_or(|u| u.preload);
    let mut summary = Summary {
        unreachable: unreached.map(|u| u.why),
        ..Summary::default()
    };
    let command = |path: &Path, arg0: &OsStr, args: &[OsString]| {
        let mut command = Command::new(path);
        // The program sees the name it was given, as a shell gives it.
        std::os::unix::process::CommandExt::arg0(&mut command, arg0);
        command.args(args);
        if preloads {
            command.env("LD_PRELOAD", &preload);
        }
        if let Some(folder) = &folder {
            command.env("LEVELDB_BLOOM_STATS_FILE", folder.path().join("stats.%p"));
        }
        if let Some(format) = request.format {
            command.env("LEVELDB_BLOOM_FORMAT", format.name());
        }
        if let Some(bits) = request.bits_per_key {
            // -0 is 0.
            command.env("LEVELDB_BLOOM_BITS_PER_KEY", (bits + 0.0).to_string());
        }
        let closed = CLOSED_AT_START.load(Ordering::Relaxed);
        let ignore_sigpipe = SIGPIPE_IGNORED_AT_START.load(Ordering::Relaxed);
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // async-signal-safe functions (close, signal).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                for fd in 0..3 {
                    if closed & (1 << fd) != 0 {
                        libc::close(fd);
                    }
                }
                if ignore_sigpipe {
                    libc::signal(libc::SIGPIPE, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        command
    };
    pass_signals_on();
    let spawned = command(&program, name, &request.program[1..])
        .spawn()
        .or_else(|e| {
            // A file without "#!" that the kernel will not run is a shell script, as execvp and
            // every shell take it.
            if e.raw_os_error() == Some(libc::ENOEXEC) {
                let mut args = vec![program.clone().into_os_string()];
                args.extend_from_slice(&request.program[1..]);
                command(Path::new("/bin/sh"), OsStr::new("sh"), &args).spawn()
            } else {
                Err(e)
            }
        });
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            say(&format!("{}: {e}", shown(&program)));
            summary.status = match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                _ => 126,
            };
            report(&request, &summary, &name.to_string_lossy());
            return Ok(summary.status);
        }
    };
    program_started(child.id() as i32);
    let status = child.wait();
    // The program's process ID is no longer its own once waited for.
    CHILD.store(0, Ordering::Relaxed);
    let status =
        status.map_err(|e| Failure::error(format!("run: waiting for the program: {e}")))?;
    summary.status = match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        _ => ERROR,
    };
    if let Some(folder) = &folder {
        summarize(folder.path(), &mut summary);
    }
    report(&request, &summary, &name.to_string_lossy());
    drop(folder);
    if let Some(signal) = status.signal() {
        die_by(signal);
    }
    Ok(summary.status)
}

/// The summary on standard error (as text, or JSON with `--json`), and as JSON in `--stats`'s
/// file: also for a program that could not be run, so that a script always finds one.
fn report(request: &Run, summary: &Summary, name: &str) {
    let json = || serde_json::to_string_pretty(summary).map(|j| j + "\n");
    if let Some(file) = &request.stats
        && let Err(e) = json()
            .map_err(std::io::Error::other)
            .and_then(|text| std::fs::write(file, text))
    {
        say(&format!("{}: the summary not written: {e}", shown(file)));
    }
    let text = if request.json {
        json().unwrap_or_default()
    } else {
        said(summary, name)
    };
    // The summary is a courtesy: a standard error that cannot be written changes nothing.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
}

/// A line on standard error, from the command.
fn say(line: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("leveldb-bloom run: {line}\n").as_bytes(),
    );
}

/// A private folder for the processes' statistics files: under TMPDIR, else /tmp, else
/// /dev/shm.
fn statistics_folder() -> Option<tempfile::TempDir> {
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

/// Ends the command by the signal that ended the program, so that its caller sees what it
/// would have seen of the program (a shell stops its loop on Ctrl-C); no core dump of the
/// command. Returns if the signal does not end it.
fn die_by(signal: i32) {
    // SAFETY: plain system calls on this process; a zeroed rlimit is valid.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}
