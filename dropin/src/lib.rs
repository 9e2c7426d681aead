//! `libleveldb_bloom_dropin`: defines `leveldb::NewBloomFilterPolicy(int)` so that programs
//! written for stock LevelDB get leveldb-bloom's policy without a source change, through
//! `LD_PRELOAD`, by linking this library ahead of libleveldb, or statically ahead of
//! `libleveldb.a`. LevelDB's `leveldb_filterpolicy_create_bloom` calls that function too, so
//! C callers are served as well. The library also carries the whole leveldb-bloom C API.
//!
//! Setting `LEVELDB_BLOOM_STATS_FILE` makes the process write the global statistics to that
//! file at exit, so that a program that knows nothing of leveldb-bloom can be shown to use it.

use std::ffi::{c_int, c_void};
use std::io::Write;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

// The C API lives in the core crate; naming it keeps its exported symbols in this library.
pub use leveldb_bloom::ffi;

unsafe extern "C-unwind" {
    /// Defined in shim.cc: a new `leveldb::FilterPolicy` backed by the C API.
    fn leveldb_bloom_dropin_new_filter_policy(bits_per_key: c_int) -> *const c_void;
}

/// How many policies this library has handed out in place of LevelDB's.
static POLICIES_CREATED: AtomicU64 = AtomicU64::new(0);

/// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name. The signature is
/// the same at the machine level (an int in, a pointer out); a C++ exception from `new`
/// passes through, as it would from LevelDB's own definition.
#[unsafe(export_name = "_ZN7leveldb20NewBloomFilterPolicyEi")]
pub extern "C-unwind" fn new_bloom_filter_policy(bits_per_key: c_int) -> *const c_void {
    POLICIES_CREATED.fetch_add(1, Relaxed);
    register_stats_file_at_exit();
    // SAFETY: the shim's function takes any int and returns a new policy or throws.
    unsafe { leveldb_bloom_dropin_new_filter_policy(bits_per_key) }
}

/// The drop-in's `leveldb::FilterPolicy` object, for a program that also uses stock
/// LevelDB's policy in the same process (the benchmark does): the returned pointer is a
/// `const leveldb::FilterPolicy*`, released with `delete`. Counts like
/// `NewBloomFilterPolicy`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_create(
    bits_per_key: c_int,
) -> *const c_void {
    new_bloom_filter_policy(bits_per_key)
}

/// The number of `leveldb::NewBloomFilterPolicy` calls this library served.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_dropin_policies_created() -> u64 {
    POLICIES_CREATED.load(Relaxed)
}

fn register_stats_file_at_exit() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        if std::env::var_os("LEVELDB_BLOOM_STATS_FILE").is_some() {
            // SAFETY: `write_stats_file` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(write_stats_file) };
        }
    });
}

/// Writes `name=value` lines of the global statistics; failures are ignored (the process is
/// exiting, and statistics must never break it).
extern "C" fn write_stats_file() {
    let _ = std::panic::catch_unwind(|| {
        let Some(path) = std::env::var_os("LEVELDB_BLOOM_STATS_FILE") else {
            return;
        };
        let stats = leveldb_bloom::stats::global_snapshot();
        let text = format!(
            "dropin_policies={}\nfilters_built={}\nkeys_added={}\nqueries={}\nno_match={}\n",
            POLICIES_CREATED.load(Relaxed),
            stats.filters_built,
            stats.keys_added,
            stats.queries,
            stats.no_match
        );
        if let Ok(mut file) = std::fs::File::create(path) {
            let _ = file.write_all(text.as_bytes());
        }
    });
}
