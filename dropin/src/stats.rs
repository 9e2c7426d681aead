//! What the drop-in did in this process, counted for the statistics file (lib.rs writes it),
//! and the one voice it speaks with on standard error.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Policies this library handed out in place of LevelDB's.
static POLICIES: AtomicU64 = AtomicU64::new(0);
/// LevelDBs whose filters the drop-in writes, per string layout (owner.rs).
static SERVED_CXX11_STRING: AtomicU64 = AtomicU64::new(0);
static SERVED_OLD_STRING: AtomicU64 = AtomicU64::new(0);
/// Why each declined LevelDB was, in order.
static DECLINED: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Filters the declined LevelDBs' own policies wrote.
static FILTERS_BY_OWN_POLICY: AtomicU64 = AtomicU64::new(0);

/// Counts a LevelDB whose strings the drop-in writes, by their layout.
pub(crate) fn count_served(cxx11_string: bool) {
    if cxx11_string {
        SERVED_CXX11_STRING.fetch_add(1, Relaxed);
    } else {
        SERVED_OLD_STRING.fetch_add(1, Relaxed);
    }
}

/// Counts a declined LevelDB, and says why, once, on standard error. (Never on Windows: a
/// LevelDB the drop-in cannot serve there does not link with it.)
#[cfg(unix)]
#[cold]
pub(crate) fn count_declined(reason: &str) {
    warn(&format!("declined {reason}"));
    DECLINED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(reason.to_owned());
}

/// Counts a filter a declined LevelDB's own policy wrote (policy.cc).
pub(crate) extern "C" fn count_own_filter() {
    FILTERS_BY_OWN_POLICY.fetch_add(1, Relaxed);
}

/// Counts a policy handed out.
pub(crate) fn count_policy() {
    POLICIES.fetch_add(1, Relaxed);
}

/// What was counted so far.
pub(crate) struct Counts {
    pub(crate) policies: u64,
    pub(crate) served_cxx11_string: u64,
    pub(crate) served_old_string: u64,
    /// Why each declined LevelDB was.
    pub(crate) declined: Vec<String>,
    pub(crate) filters_by_own_policy: u64,
}

pub(crate) fn counts() -> Counts {
    Counts {
        policies: POLICIES.load(Relaxed),
        served_cxx11_string: SERVED_CXX11_STRING.load(Relaxed),
        served_old_string: SERVED_OLD_STRING.load(Relaxed),
        declined: DECLINED.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        filters_by_own_policy: FILTERS_BY_OWN_POLICY.load(Relaxed),
    }
}

/// One line on standard error; dropped if standard error cannot take it.
pub(crate) fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "leveldb-bloom: {line}");
}
