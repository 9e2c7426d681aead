//! What the drop-in did in this process: its counters, the statistics file written from them
//! at exit (`LEVELDB_BLOOM_STATS_FILE`), and the one voice it speaks with on standard error.
//!
//! Counting never blocks and takes no lock: a `fork` in another thread can leave none held in
//! the child, and a signal or a thread's small stack meets nothing large. The file's name and
//! standard error's identity are taken once, when the drop-in is loaded.

use std::ffi::OsString;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Relaxed, Ordering::Release};

/// Policies this library handed out in place of LevelDB's.
static POLICIES: AtomicU64 = AtomicU64::new(0);
/// LevelDBs whose filters the drop-in writes, per string layout (owner.rs).
static SERVED_CXX11_STRING: AtomicU64 = AtomicU64::new(0);
static SERVED_OLD_STRING: AtomicU64 = AtomicU64::new(0);
/// Filters stock LevelDB's code wrote for the LevelDBs the drop-in declined.
static FILTERS_BY_STOCK: AtomicU64 = AtomicU64::new(0);
/// Policies not made: no definition but the drop-in's, and a string it cannot prove.
static POLICIES_REFUSED: AtomicU64 = AtomicU64::new(0);

/// Why each declined LevelDB was: a list pushed to without a lock, newest first.
struct Declined {
    reason: String,
    next: *mut Declined,
}
static DECLINED: AtomicPtr<Declined> = AtomicPtr::new(std::ptr::null_mut());

/// Counts a LevelDB whose strings the drop-in writes, by their layout.
pub(crate) fn count_served(cxx11_string: bool) {
    if cxx11_string {
        SERVED_CXX11_STRING.fetch_add(1, Relaxed);
    } else {
        SERVED_OLD_STRING.fetch_add(1, Relaxed);
    }
}

/// Counts a declined LevelDB, and says why, once, on standard error.
#[cold]
pub(crate) fn count_declined(reason: &str) {
    warn(&format!("declined {reason}"));
    let node = Box::into_raw(Box::new(Declined {
        reason: reason.to_owned(),
        next: std::ptr::null_mut(),
    }));
    let mut head = DECLINED.load(Relaxed);
    loop {
        // SAFETY: `node` is ours until published.
        unsafe { (*node).next = head };
        match DECLINED.compare_exchange_weak(head, node, Release, Relaxed) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

/// Counts a filter stock LevelDB's code wrote for a declined LevelDB.
pub(crate) fn count_filter_by_stock() {
    FILTERS_BY_STOCK.fetch_add(1, Relaxed);
}

/// Counts a policy handed out.
pub(crate) fn count_policy() {
    POLICIES.fetch_add(1, Relaxed);
}

/// Counts a policy not made (NULL returned), saying why the first time.
#[cold]
pub(crate) fn count_refused(why: &str) {
    if POLICIES_REFUSED.fetch_add(1, Relaxed) == 0 {
        count_declined(why);
    }
}

/// What was counted so far.
pub(crate) struct Counts {
    pub(crate) policies: u64,
    pub(crate) served_cxx11_string: u64,
    pub(crate) served_old_string: u64,
    /// Why each declined LevelDB was, oldest first.
    pub(crate) declined: Vec<String>,
    pub(crate) policies_refused: u64,
}

pub(crate) fn counts() -> Counts {
    let mut declined = Vec::new();
    let mut node = DECLINED.load(std::sync::atomic::Ordering::Acquire);
    while !node.is_null() {
        // SAFETY: published nodes are never freed or changed.
        let n = unsafe { &*node };
        declined.push(n.reason.clone());
        node = n.next;
    }
    declined.reverse();
    Counts {
        policies: POLICIES.load(Relaxed),
        served_cxx11_string: SERVED_CXX11_STRING.load(Relaxed),
        served_old_string: SERVED_OLD_STRING.load(Relaxed),
        declined,
        policies_refused: POLICIES_REFUSED.load(Relaxed),
    }
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

/// Takes the statistics file's name, the time and standard error's identity, and registers
/// the file's writing at exit when a file is asked for. Once, while the drop-in is loaded.
pub(crate) fn at_load() {
    AT_LOAD.get_or_init(|| {
        let loaded_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let at_load = AtLoad {
            file: stats_file_setting(),
            loaded_at,
            #[cfg(unix)]
            stderr: fd_identity(2),
        };
        if at_load.file.is_some() {
            // SAFETY: `write_stats_file` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(write_stats_file) };
            #[cfg(unix)]
            // SAFETY: `forked` is an `extern "C" fn()` that never unwinds and only loads and
            // stores atomics (it runs in the child, where only the forking thread exists).
            unsafe {
                libc::pthread_atfork(None, None, Some(forked));
            }
        }
        at_load
    });
}

/// The work a forked child inherited from its parent's counters (which its file leaves
/// out: its parent reports it), and the parent's process ID (0: not forked since load).
static FORK_BASE: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
static FORKED_FROM: AtomicU64 = AtomicU64::new(0);

/// The work counters the statistics file reports: filters built, by stock's code, keys,
/// queries, "no match" answers.
fn work() -> [u64; 5] {
    let stats = leveldb_bloom::global_stats();
    [
        stats.filters_built,
        FILTERS_BY_STOCK.load(Relaxed),
        stats.keys_added,
        stats.queries,
        stats.no_match,
    ]
}

/// In a forked child: its counts start from what it inherited.
#[cfg(unix)]
extern "C" fn forked() {
    for (base, now) in FORK_BASE.iter().zip(work()) {
        base.store(now, Relaxed);
    }
    // SAFETY: getppid has no preconditions.
    FORKED_FROM.store(
        u64::try_from(unsafe { libc::getppid() }).unwrap_or(0),
        Relaxed,
    );
}

/// The format the policies build and the bits per key the environment set (`format.rs`),
/// as the statistics file names them.
static FORMAT: OnceLock<(&'static str, String)> = OnceLock::new();

/// Records the format and bits per key for the statistics file (at load, once the
/// environment is read).
pub(crate) fn describe_format(format: &'static str, bits_per_key: Option<f64>) {
    FORMAT.get_or_init(|| {
        (
            format,
            bits_per_key.map_or_else(|| "program".to_owned(), |bits| bits.to_string()),
        )
    });
}

/// Whether a statistics file is asked for (the policies then count their work).
pub(crate) fn file_wanted() -> bool {
    AT_LOAD.get().is_some_and(|a| a.file.is_some())
}

/// `LEVELDB_BLOOM_STATS_FILE`, unless the process runs in secure-execution mode (set-user-ID,
/// set-group-ID or with capabilities: the kernel's AT_SECURE), where the environment is its
/// caller's and must not name files the program writes.
fn stats_file_setting() -> Option<OsString> {
    #[cfg(unix)]
    {
        // SAFETY: getauxval has no preconditions; an absent entry reads as 0.
        if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
            return None;
        }
    }
    std::env::var_os("LEVELDB_BLOOM_STATS_FILE").filter(|name| !name.is_empty())
}

/// The file's name with `%p` replaced by this process's ID (a forked child's own).
fn stats_path(setting: &OsString) -> OsString {
    let pid = std::process::id().to_string();
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

/// The statistics file's text.
fn stats_text(loaded_at: u128) -> String {
    let (format, bits) = FORMAT.get().map_or(("bloom", "program"), |(format, bits)| {
        (*format, bits.as_str())
    });
    let counts = counts();
    let (policies, cxx11, old) = (
        counts.policies,
        counts.served_cxx11_string,
        counts.served_old_string,
    );
    let declined = &counts.declined;
    let served = match (policies > 0, declined.is_empty(), cxx11 + old > 0) {
        (false, true, _) => "no",
        (true, true, _) => "yes",
        (_, false, true) => "partly",
        (_, false, false) => "declined",
    };
    let work = work();
    let [filters, by_stock, keys, queries, no_match] =
        std::array::from_fn(|i| work[i].saturating_sub(FORK_BASE[i].load(Relaxed)));
    let mut text = format!(
        "served={served}\nformat={}\nbits_per_key={bits}\ndropin_policies={policies}\n\
         policies_refused={}\n\
         leveldbs_cxx11_string={cxx11}\nleveldbs_old_string={old}\nleveldbs_declined={}\n\
         filters_built={filters}\nfilters_built_by_stock={by_stock}\nkeys_added={keys}\n\
         queries={queries}\nno_match={no_match}\npid={}\nloaded_at_ns={loaded_at}\n",
        format,
        counts.policies_refused,
        declined.len(),
        std::process::id(),
    );
    let forked_from = FORKED_FROM.load(Relaxed);
    if forked_from != 0 {
        text.push_str(&format!("forked_from={forked_from}\n"));
    }
    for reason in declined {
        text.push_str(&format!("declined={reason}\n"));
    }
    text
}

/// The `loaded_at_ns` a statistics file's text records, if any.
fn recorded_load(text: &str) -> Option<u128> {
    text.lines()
        .find_map(|line| line.strip_prefix("loaded_at_ns="))
        .and_then(|v| v.parse().ok())
}

/// The `pid` a statistics file's text records, if any.
fn recorded_pid(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|line| line.strip_prefix("pid="))
        .and_then(|v| v.parse().ok())
}

/// Writes the statistics file at exit; failures are ignored (the process is exiting, and
/// statistics must never break it). A symlink is not followed, and a FIFO no reader holds
/// open is not waited for. A process in which the drop-in made no policy and declined no
/// LevelDB (a shell or `timeout` that started the program, say) leaves alone a file written
/// by a process that loaded the drop-in after it did: that is its child's word; and an idle
/// copy of the drop-in leaves alone the file another copy in the same process wrote.
extern "C" fn write_stats_file() {
    let _ = std::panic::catch_unwind(|| {
        let Some(at_load) = AT_LOAD.get() else {
            return;
        };
        let Some(setting) = &at_load.file else {
            return;
        };
        let path = stats_path(setting);
        let counts = counts();
        let idle = counts.policies == 0 && counts.declined.is_empty();
        if idle
            && let Some(theirs) = read_existing(&path)
            && (recorded_load(&theirs).is_some_and(|load| load >= at_load.loaded_at)
                || recorded_pid(&theirs) == Some(std::process::id()))
        {
            return;
        }
        let text = stats_text(at_load.loaded_at);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        if let Ok(mut file) = options.open(path) {
            use std::io::Write;
            let _ = file.write_all(text.as_bytes());
        }
    });
}

/// The text of an existing statistics file (a regular file, not followed through a link).
fn read_existing(path: &OsString) -> Option<String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    use std::io::Read;
    file.take(1 << 20).read_to_string(&mut text).ok()?;
    Some(text)
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
    fn the_file_records_its_writer_s_load() {
        let text = stats_text(1_234_567_890_123_456_789);
        assert_eq!(recorded_load(&text), Some(1_234_567_890_123_456_789));
        assert!(text.contains(&format!("pid={}\n", std::process::id())));
        assert_eq!(recorded_load("served=yes\n"), None);
    }

    #[test]
    fn percent_p_is_this_process_s_id() {
        let path = stats_path(&OsString::from("stats-%p.txt%p"));
        let pid = std::process::id();
        assert_eq!(path, OsString::from(format!("stats-{pid}.txt{pid}")));
    }
}
