//! `libleveldb_bloom_dropin`: defines `leveldb::NewBloomFilterPolicy(int)` so that programs
//! written for stock LevelDB get leveldb-bloom's policy without a source change, through
//! `LD_PRELOAD`, by linking this library ahead of libleveldb, or statically ahead of
//! `libleveldb.a`. LevelDB's `leveldb_filterpolicy_create_bloom` calls that function too, so
//! C callers are served as well. The library also carries the whole leveldb-bloom C API.
//!
//! Setting `LEVELDB_BLOOM_STATS_FILE` makes the drop-in's policies count their work and the
//! process write the global statistics to that file at exit, so that a program that knows
//! nothing of leveldb-bloom can be shown to use it (not in set-user-ID or other
//! secure-execution programs, and never through a symlink). Unset, nothing is counted.
//! `LEVELDB_BLOOM_FORMAT` and `LEVELDB_BLOOM_BITS_PER_KEY` choose the filters it builds
//! (`format.rs`). Nothing the drop-in does can end the program it serves: a warning that
//! standard error does not take is dropped, a failed statistics file is not written.

mod format;

use std::ffi::{OsString, c_int, c_void};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

// The C API lives in the core crate; naming it keeps its exported symbols in this library.
pub use leveldb_bloom::ffi;

unsafe extern "C-unwind" {
    /// Defined in shim.cc: a new `leveldb::FilterPolicy` that owns `policy` and answers
    /// through the C API; throws `std::bad_alloc` if `policy` is NULL or the object cannot be
    /// allocated. (`policy` is a `leveldb_bloom_policy*`; opaque here, its layout is the
    /// core's own.)
    fn leveldb_bloom_dropin_new_filter_policy(policy: *mut c_void) -> *const c_void;
}

/// How many policies this library has handed out in place of LevelDB's.
static POLICIES_CREATED: AtomicU64 = AtomicU64::new(0);

/// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name. The signature is
/// the same at the machine level (an int in, a pointer out); a C++ exception from `new`
/// passes through, as it would from LevelDB's own definition.
#[unsafe(export_name = "_ZN7leveldb20NewBloomFilterPolicyEi")]
pub extern "C-unwind" fn new_bloom_filter_policy(bits_per_key: c_int) -> *const c_void {
    new_policy_object(bits_per_key)
}

/// The body of both entry points. They must not call each other: in a process that links
/// libleveldb ahead of this library, a call to the exported `NewBloomFilterPolicy` symbol
/// from inside it may resolve to LevelDB's own.
fn new_policy_object(bits_per_key: c_int) -> *const c_void {
    POLICIES_CREATED.fetch_add(1, Relaxed);
    register_stats_file_at_exit();
    let policy = create_policy(bits_per_key);
    // Counting only for the statistics file: otherwise the queries do no work for it.
    let policy = if stats_file().is_some() {
        // SAFETY: `policy` is NULL or a live policy, destroyed once here after the copy.
        unsafe {
            let counted = ffi::leveldb_bloom_policy_counted(policy);
            ffi::leveldb_bloom_policy_destroy(policy);
            counted
        }
    } else {
        policy
    };
    // SAFETY: `policy` is NULL or a live policy from the C API, whose ownership passes to the
    // shim; NULL throws, as LevelDB's own `new` does when memory runs out.
    unsafe { leveldb_bloom_dropin_new_filter_policy(policy.cast()) }
}

/// The C policy for a program that asked for `bits_per_key`, in the format the environment
/// chose (`format.rs`); Bloom filters when the bits per key are outside what compact filters
/// take. A negative `bits_per_key` (undefined behaviour in LevelDB) is taken as 0: LevelDB's
/// C wrapper cannot handle a NULL policy, and 0 still builds valid filters every reader
/// understands. NULL only when memory runs out.
fn create_policy(bits_per_key: c_int) -> *mut ffi::leveldb_bloom_policy {
    let program_bits = bits_per_key.max(0);
    let choice = format::choice();
    if choice.format == format::Format::Compact {
        let bits = choice.bits_per_key.unwrap_or(f64::from(program_bits));
        if leveldb_bloom::CompactPolicy::new(bits).is_ok() {
            return ffi::leveldb_bloom_policy_create_compact(bits);
        }
        warn_once_compact_refused(bits);
    }
    let bits = choice
        .bits_per_key
        .map_or(program_bits, |bits| bits as c_int);
    ffi::leveldb_bloom_policy_create(bits)
}

/// One line, the first time a program's own bits per key are outside what compact filters
/// take: its policies then build Bloom filters.
#[cold]
fn warn_once_compact_refused(bits: f64) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        warn(&format!(
            "compact filters take 0 to {} bits per key, not {bits}; building bloom filters",
            leveldb_bloom::compact::MAX_BITS_PER_KEY
        ));
    });
}

/// One line on standard error; dropped if standard error cannot take it.
pub(crate) fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "leveldb-bloom: {line}");
}

/// The drop-in's `leveldb::FilterPolicy` object, for a program that also uses stock
/// LevelDB's policy in the same process (the benchmark does): the returned pointer is a
/// `const leveldb::FilterPolicy*`, released with `delete`. Counts like
/// `NewBloomFilterPolicy`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_create(
    bits_per_key: c_int,
) -> *const c_void {
    new_policy_object(bits_per_key)
}

/// The number of `leveldb::NewBloomFilterPolicy` calls this library served.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_dropin_policies_created() -> u64 {
    POLICIES_CREATED.load(Relaxed)
}

fn register_stats_file_at_exit() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        if stats_file().is_some() {
            // SAFETY: `write_stats_file` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(write_stats_file) };
        }
    });
}

/// `LEVELDB_BLOOM_STATS_FILE`, unless the process runs in secure-execution mode (set-user-ID,
/// set-group-ID or with capabilities: the kernel's AT_SECURE), where the environment is
/// its caller's and must not name files the program writes.
fn stats_file() -> Option<OsString> {
    // SAFETY: getauxval has no preconditions; an absent entry reads as 0.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    if secure {
        return None;
    }
    std::env::var_os("LEVELDB_BLOOM_STATS_FILE")
}

/// Writes `name=value` lines of the global statistics; failures are ignored (the process is
/// exiting, and statistics must never break it). A symlink is not followed, and a FIFO no
/// reader holds open is not waited for.
extern "C" fn write_stats_file() {
    let _ = std::panic::catch_unwind(|| {
        let Some(path) = stats_file() else {
            return;
        };
        let stats = leveldb_bloom::global_stats();
        let choice = format::choice();
        let bits = choice
            .bits_per_key
            .map_or_else(|| "program".to_owned(), |bits| bits.to_string());
        let text = format!(
            "format={}\nbits_per_key={bits}\ndropin_policies={}\nfilters_built={}\n\
             keys_added={}\nqueries={}\nno_match={}\n",
            format::name(choice.format),
            POLICIES_CREATED.load(Relaxed),
            stats.filters_built,
            stats.keys_added,
            stats.queries,
            stats.no_match
        );
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path);
        if let Ok(mut file) = file {
            let _ = file.write_all(text.as_bytes());
        }
    });
}
