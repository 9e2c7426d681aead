//! What the drop-in did in this process: its counters, the statistics file written from them
//! (`LEVELDB_BLOOM_STATS_FILE`), and the one voice it speaks with on standard error.
//!
//! Counting never blocks and takes no lock: a `fork` in another thread can leave none held in
//! the child, and a signal or a thread's small stack meets nothing large. The file's name,
//! the process's ID and standard error's identity are taken when the drop-in is loaded (the
//! ID again in a forked child), so that writing the file makes no system call but the
//! file's own. It is written when the last live policy of the drop-in's is destroyed (a Go
//! program ends without `atexit`), after a policy is declined or refused, and at exit.

use std::ffi::OsString;

use leveldb_bloom::Format;
use leveldb_bloom_dropin_statistics::{Copy, Counters, Statistics};
use std::sync::OnceLock;
use std::sync::atomic::{
    AtomicPtr, AtomicU8, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

/// `NewBloomFilterPolicy` calls answered, and how: the drop-in's policy (`SERVED`), the
/// LevelDB's own one unchanged (`DECLINED`), or none (`REFUSED`).
static POLICIES: AtomicU64 = AtomicU64::new(0);
static SERVED: AtomicU64 = AtomicU64::new(0);
static DECLINED: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);
/// The drop-in's policies not yet destroyed.
static LIVE: AtomicU64 = AtomicU64::new(0);

/// What was said of each LevelDB, once per distinct line: a list pushed to without a lock,
/// newest first, never freed.
struct Said {
    line: String,
    next: *mut Said,
}
static SAID: AtomicPtr<Said> = AtomicPtr::new(std::ptr::null_mut());

/// Adds `line` to what the file says, unless it says it already; whether it was new.
fn say(line: String) -> bool {
    let node = Box::into_raw(Box::new(Said {
        line,
        next: std::ptr::null_mut(),
    }));
    let mut head = SAID.load(Acquire);
    loop {
        // SAFETY: `node` is ours until published; published nodes are never freed.
        let known = lines_from(head).any(|l| l == unsafe { &(*node).line });
        if known {
            // SAFETY: never published.
            drop(unsafe { Box::from_raw(node) });
            return false;
        }
        // SAFETY: as above.
        unsafe { (*node).next = head };
        match SAID.compare_exchange_weak(head, node, Release, Acquire) {
            Ok(_) => return true,
            Err(now) => head = now,
        }
    }
}

/// The lines said, newest first, from `head`.
fn lines_from(head: *mut Said) -> impl Iterator<Item = &'static str> {
    let mut node = head;
    std::iter::from_fn(move || {
        // SAFETY: published nodes are never freed or changed.
        let n = unsafe { node.as_ref() }?;
        node = n.next;
        Some(n.line.as_str())
    })
}

/// What the environment chose (`format.rs`): the format, and the bits per key that replace
/// the program's; the file says them where no policy was made.
static CHOSEN: OnceLock<(Format, Option<f64>)> = OnceLock::new();

/// Notes the environment's choice, for the file.
pub(crate) fn chosen(format: Format, bits_per_key: Option<f64>) {
    let _ = CHOSEN.set((format, bits_per_key));
}

/// The formats the drop-in's policies build: [`BUILDS_BLOOM`], [`BUILDS_COMPACT`].
static BUILDS: AtomicU8 = AtomicU8::new(0);
const BUILDS_BLOOM: u8 = 1;
const BUILDS_COMPACT: u8 = 2;

/// Notes that a policy of the drop-in's builds compact filters, or Bloom ones.
pub(crate) fn count_format(compact: bool) {
    BUILDS.fetch_or(
        if compact {
            BUILDS_COMPACT
        } else {
            BUILDS_BLOOM
        },
        Relaxed,
    );
}

/// Counts a policy of the drop-in's.
pub(crate) fn count_served() {
    POLICIES.fetch_add(1, Relaxed);
    SERVED.fetch_add(1, Relaxed);
}

/// Says that `leveldb` is served, written as `how` says.
pub(crate) fn say_served(leveldb: &str, how: &str) {
    say(format!("leveldb={leveldb}: served, {how}"));
}

/// Counts a LevelDB's own policy handed back unchanged, says why (once on standard error), and
/// writes the file.
#[cold]
pub(crate) fn declined(why: &str) {
    POLICIES.fetch_add(1, Relaxed);
    DECLINED.fetch_add(1, Relaxed);
    if say(format!("declined={why}; its own policy writes and answers")) {
        warn(&format!(
            "declined {why}; its own policy writes and answers"
        ));
    }
    write_now();
}

/// Counts a policy not made (NULL returned), says why (once on standard error), and writes
/// the file.
#[cold]
pub(crate) fn refused(why: &str) {
    POLICIES.fetch_add(1, Relaxed);
    REFUSED.fetch_add(1, Relaxed);
    if say(format!("refused={why}")) {
        warn(&format!("refused a policy: {why}"));
    }
    write_now();
}

/// A policy object of the drop-in's made, and destroyed: the file is written when the last
/// one goes.
pub(crate) fn policy_made() {
    LIVE.fetch_add(1, Relaxed);
}

pub(crate) fn policy_gone() {
    if LIVE.fetch_sub(1, Relaxed) == 1 {
        write_now();
    }
}

/// The number of `NewBloomFilterPolicy` calls answered.
pub(crate) fn policies() -> u64 {
    POLICIES.load(Relaxed)
}

/// What the drop-in took from the process when it was loaded.
struct AtLoad {
    /// `LEVELDB_BLOOM_STATS_FILE` as set (`%p` still in it), unless in secure-execution mode.
    file: Option<OsString>,
    /// When the drop-in was loaded, in nanoseconds of the real-time clock: written into the
    /// file, so that a process started before another can tell that other's file from an
    /// older one.
    loaded_at: u128,
    /// Standard error's device and inode at load; `None` if it was closed.
    #[cfg(unix)]
    stderr: Option<(u64, u64)>,
}

static AT_LOAD: OnceLock<AtLoad> = OnceLock::new();
/// This process's ID, and its parent's where it was forked after the drop-in was loaded.
static PID: AtomicU64 = AtomicU64::new(0);
static FORKED_FROM: AtomicU64 = AtomicU64::new(0);
/// When the process started (clock ticks after boot; 0: not read yet), which tells this
/// process's file from one an earlier process of the same ID wrote.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// Takes the statistics file's name, the time, the process's ID and standard error's
/// identity, and registers the file's writing at exit when a file is asked for. Once, while
/// the drop-in is loaded.
pub(crate) fn at_load() {
    AT_LOAD.get_or_init(|| {
        let loaded_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        PID.store(u64::from(std::process::id()), Relaxed);
        let at_load = AtLoad {
            file: stats_file_setting(),
            loaded_at,
            #[cfg(unix)]
            stderr: fd_identity(2),
        };
        if at_load.file.is_some() {
            STARTED.store(process_start().unwrap_or(0), Relaxed);
            // SAFETY: `write_at_exit` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(write_at_exit) };
            #[cfg(unix)]
            // SAFETY: `forked` is an `extern "C" fn()` that never unwinds and only loads and
            // stores atomics and asks the process's ID (it runs in the child, where only the
            // forking thread exists).
            unsafe {
                libc::pthread_atfork(None, None, Some(forked));
            }
        }
        at_load
    });
}

/// What a forked child inherited from its parent's counters (which its file leaves out: its
/// parent reports it).
static FORK_BASE: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

/// The counters the statistics file reports.
fn counters() -> Counters {
    let stats = leveldb_bloom::global_stats();
    Counters {
        dropin_policies: POLICIES.load(Relaxed),
        policies_served: SERVED.load(Relaxed),
        policies_declined: DECLINED.load(Relaxed),
        policies_refused: REFUSED.load(Relaxed),
        filters_built: stats.filters_built,
        keys_added: stats.keys_added,
        queries: stats.queries,
        no_match: stats.no_match,
    }
}

/// The counters of this process's own work (a forked child's since the fork).
fn own_counters() -> Counters {
    let base = Counters::from_array(FORK_BASE.each_ref().map(|base| base.load(Relaxed)));
    counters().since(base)
}

/// In a forked child: its counts start from what it inherited, and it has an ID of its own.
#[cfg(unix)]
extern "C" fn forked() {
    for (base, now) in FORK_BASE.iter().zip(counters().to_array()) {
        base.store(now, Relaxed);
    }
    FORKED_FROM.store(PID.load(Relaxed), Relaxed);
    PID.store(u64::from(std::process::id()), Relaxed);
    // Read when the file is written: not here, where only the forking thread exists.
    STARTED.store(0, Relaxed);
}

/// When this process started, in clock ticks after boot (`/proc/self/stat`'s 22nd field);
/// `None` where there is no `/proc`.
fn process_start() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let text = file::read(&OsString::from("/proc/self/stat"))?;
        let text = String::from_utf8_lossy(&text);
        // The command name, in parentheses, may hold spaces: the fields after it count.
        let after_name = &text[text.rfind(')')? + 1..];
        after_name.split_whitespace().nth(19)?.parse().ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// When this process started, read once.
fn started() -> Option<u64> {
    match STARTED.load(Relaxed) {
        0 => {
            let started = process_start()?;
            STARTED.store(started, Relaxed);
            Some(started)
        }
        started => Some(started),
    }
}

/// This copy of the drop-in, among others in the process: when it was loaded, and where.
fn copy_id(loaded_at: u128) -> String {
    format!("{loaded_at}-{:x}", &raw const AT_LOAD as usize)
}

/// Whether a statistics file is asked for (the policies then count their work).
pub(crate) fn file_wanted() -> bool {
    AT_LOAD.get().is_some_and(|a| a.file.is_some())
}

/// `LEVELDB_BLOOM_STATS_FILE`, unless the process runs in secure-execution mode (set-user-ID,
/// set-group-ID or with capabilities: the kernel's AT_SECURE), where the environment is its
/// caller's and must not name files the program writes. A relative name is taken in the
/// directory the process is in when the drop-in loads, as its user gave it: a daemon that
/// changes directory afterwards still writes where it was asked to.
fn stats_file_setting() -> Option<OsString> {
    #[cfg(unix)]
    {
        // SAFETY: getauxval has no preconditions; an absent entry reads as 0.
        if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
            return None;
        }
    }
    let name = std::env::var_os("LEVELDB_BLOOM_STATS_FILE").filter(|name| !name.is_empty())?;
    if std::path::Path::new(&name).is_absolute() {
        return Some(name);
    }
    // The one system call a relative name costs (getcwd), at load; without a current
    // directory to name (removed, or refused), the name as given.
    Some(std::path::absolute(&name).map_or(name, |path| path.into_os_string()))
}

/// The file's name with `%p` replaced by `pid`.
fn stats_path(setting: &OsString, pid: u64) -> OsString {
    let pid = pid.to_string();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let bytes = setting.as_bytes();
        let mut out = Vec::with_capacity(bytes.len() + pid.len());
        let mut rest = bytes;
        while let Some(at) = rest.windows(2).position(|w| w == b"%p") {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(pid.as_bytes());
            rest = &rest[at + 2..];
        }
        out.extend_from_slice(rest);
        OsString::from_vec(out)
    }
    #[cfg(windows)]
    match setting.to_str() {
        Some(text) => text.replace("%p", &pid).into(),
        None => setting.clone(),
    }
}

/// The statistics of this process, `pid`.
fn statistics(loaded_at_ns: u128, pid: u64) -> Statistics {
    let counters = own_counters();
    let mut said: Vec<&str> = lines_from(SAID.load(Acquire)).collect();
    said.reverse();
    let lines = |key: &str| {
        said.iter()
            .filter_map(|line| line.strip_prefix(key))
            .map(str::to_owned)
            .collect()
    };
    let (format, bits_per_key) = CHOSEN.get().copied().unwrap_or((Format::Bloom, None));
    let builds = BUILDS.load(Relaxed);
    let mut formats: Vec<Format> = [
        (BUILDS_BLOOM, Format::Bloom),
        (BUILDS_COMPACT, Format::Compact),
    ]
    .into_iter()
    .filter(|&(bit, _)| builds & bit != 0)
    .map(|(_, format)| format)
    .collect();
    if formats.is_empty() {
        formats.push(format);
    }
    Statistics {
        formats,
        bits_per_key,
        counters,
        pid,
        loaded_at_ns,
        forked_from: Some(FORKED_FROM.load(Relaxed)).filter(|&parent| parent != 0),
        started: started(),
        copies: vec![Copy {
            id: copy_id(loaded_at_ns),
            counters,
        }],
        served: lines("leveldb="),
        declined: lines("declined="),
        refused: lines("refused="),
    }
}

extern "C" fn write_at_exit() {
    write_now();
}

/// Writes the statistics file; failures are ignored (statistics must never break the
/// program). A symlink is not followed, and a FIFO no reader holds open is not waited for.
/// Where another copy of the drop-in in this process wrote the file, this copy's line
/// replaces its own and the counters sum every copy's. A process in which the drop-in made no
/// policy (a shell or `timeout` that started the program, say) leaves alone a file written by
/// a process that loaded the drop-in after it did (that is its child's word).
fn write_now() {
    let _ = std::panic::catch_unwind(|| {
        let Some(at_load) = AT_LOAD.get() else {
            return;
        };
        let Some(setting) = &at_load.file else {
            return;
        };
        let pid = PID.load(Relaxed);
        let path = stats_path(setting, pid);
        let mut ours = statistics(at_load.loaded_at, pid);
        if let Some(theirs) = file::read(&path) {
            let theirs = Statistics::parse(&String::from_utf8_lossy(&theirs));
            let same_process = theirs.pid == pid
                && (theirs.started.is_none()
                    || ours.started.is_none()
                    || theirs.started == ours.started);
            if same_process {
                ours = ours.with_other_copies(&theirs);
            } else if own_counters().dropin_policies == 0
                && theirs.loaded_at_ns >= at_load.loaded_at
            {
                return;
            }
        }
        file::write(&path, ours.to_text().as_bytes());
    });
}

/// The file itself, with the system calls of the file's own alone (open, fstat, read,
/// write, close), as a program whose calls are filtered to stock LevelDB's makes them: no
/// `metadata` or `read_to_end` (statx, lseek). Never through a link, never waiting on a FIFO.
mod file {
    use std::ffi::OsString;
    use std::io::{Read, Write};

    fn options() -> std::fs::OpenOptions {
        #[cfg_attr(windows, allow(unused_mut))] // flags are set on Unix only
        let mut options = std::fs::OpenOptions::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        options
    }

    /// Whether `file` is a regular file.
    fn regular(file: &std::fs::File) -> bool {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: all-zero bytes are a valid `stat`.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: an open descriptor and a struct to fill.
            let statted = unsafe { libc::fstat(file.as_raw_fd(), &mut st) } == 0;
            statted && st.st_mode & libc::S_IFMT == libc::S_IFREG
        }
        #[cfg(windows)]
        {
            let _ = file;
            true
        }
    }

    /// The text of an existing statistics file (a regular file, up to 1 MiB), read on the
    /// heap: this may run on a signal handler's small stack.
    pub(super) fn read(path: &OsString) -> Option<Vec<u8>> {
        let mut file = options().read(true).open(path).ok()?;
        let mut text = vec![0u8; 0];
        if regular(&file) {
            while text.len() < 1 << 20 {
                let at = text.len();
                text.resize(at + 4096, 0);
                let n = file.read(&mut text[at..]).unwrap_or(0);
                text.truncate(at + n);
                if n == 0 {
                    break;
                }
            }
        }
        Some(text)
    }

    pub(super) fn write(path: &OsString, text: &[u8]) {
        if let Ok(mut file) = options().write(true).create(true).truncate(true).open(path) {
            let _ = file.write_all(text);
        }
    }
}

/// The device and inode of file descriptor `fd`, if it is open.
#[cfg(unix)]
fn fd_identity(fd: libc::c_int) -> Option<(u64, u64)> {
    // SAFETY: all-zero bytes are a valid `stat`; fstat fills it for an open descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat with a descriptor number and a struct to fill.
    let open = unsafe { libc::fstat(fd, &mut st) } == 0;
    #[allow(clippy::unnecessary_cast)] // not u64 on every target
    open.then_some((st.st_dev as u64, st.st_ino as u64))
}

/// One line on standard error, only while descriptor 2 is still the file it was when the
/// drop-in was loaded (a daemon that closed it may have a table open under that number
/// now); dropped if it cannot take it. One `write`, no lock.
pub(crate) fn warn(line: &str) {
    let text = format!("leveldb-bloom: {line}\n");
    #[cfg(unix)]
    {
        let Some(expected) = AT_LOAD.get().and_then(|a| a.stderr) else {
            return;
        };
        if fd_identity(2) != Some(expected) {
            return;
        }
        // SAFETY: writes the bytes of `text` to descriptor 2.
        let _ = unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    }
    #[cfg(windows)]
    {
        use std::io::Write;
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_records_its_writer_s_load_and_process() {
        let text = statistics(1_234_567_890_123_456_789, 4242).to_text();
        let read = Statistics::parse(&text);
        assert_eq!(read.loaded_at_ns, 1_234_567_890_123_456_789);
        assert_eq!(read.pid, 4242);
    }

    #[test]
    fn percent_p_is_the_process_s_id() {
        let path = stats_path(&OsString::from("stats-%p.txt%p"), 77);
        assert_eq!(path, OsString::from("stats-77.txt77"));
    }

    #[test]
    fn each_line_is_said_once() {
        assert!(say("test=one".to_owned()));
        assert!(!say("test=one".to_owned()));
        assert!(say("test=two".to_owned()));
        let said: Vec<_> = lines_from(SAID.load(Acquire)).collect();
        assert_eq!(said.iter().filter(|l| **l == "test=one").count(), 1);
    }
}
