//! `libleveldb_bloom_dropin`: defines `leveldb::NewBloomFilterPolicy(int)` so that programs
//! written for stock LevelDB get leveldb-bloom's policy without a source change, through
//! `LD_PRELOAD`, by linking this library ahead of libleveldb, or statically ahead of
//! `libleveldb.a`. LevelDB's `leveldb_filterpolicy_create_bloom` calls that function too, so
//! C callers are served as well. The library also carries the whole leveldb-bloom C API, and
//! depends on no LevelDB: it serves the one in the process, whichever it is (LevelDB 1.20 to
//! 1.23, shared or bundled, built with either of libstdc++'s string layouts: `caller.rs`).
//!
//! Setting `LEVELDB_BLOOM_STATS_FILE` makes the drop-in's policies count their work and the
//! process write the global statistics to that file at exit, also when the drop-in served
//! nothing, so that a program that knows nothing of leveldb-bloom can be shown to use it, or
//! not (not in set-user-ID or other secure-execution programs, and never through a symlink).
//! Unset, nothing is counted. `LEVELDB_BLOOM_FORMAT` and `LEVELDB_BLOOM_BITS_PER_KEY` choose
//! the filters it builds (`format.rs`). Nothing the drop-in does can end the program it
//! serves: a warning that standard error does not take is dropped, a failed statistics file
//! is not written.

mod caller;
mod format;

use std::ffi::{OsString, c_int, c_void};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Once, OnceLock};

use caller::{LoadedObject, StringAbi};

// The C API (the capi crate); naming it keeps its exported symbols in this library.
pub use leveldb_bloom_capi as ffi;

unsafe extern "C-unwind" {
    // Defined in policy.cc, once per string layout: a new `leveldb::FilterPolicy` that owns
    // `policy` and answers through the C API; throws `std::bad_alloc` if `policy` is NULL or
    // the object cannot be allocated. (`policy` is a `leveldb_bloom_policy*`; opaque here,
    // its layout is the core's own.)
    fn leveldb_bloom_dropin_new_policy_cxx11_string(policy: *mut c_void) -> *const c_void;
    fn leveldb_bloom_dropin_new_policy_old_string(policy: *mut c_void) -> *const c_void;
}

unsafe extern "C-unwind" {
    // Defined in entry.cc: the entry points' bodies, which pass their return address to
    // `leveldb_bloom_dropin_filter_policy_for`.
    fn leveldb_bloom_dropin_entry_new_bloom_filter_policy(bits_per_key: c_int) -> *const c_void;
    fn leveldb_bloom_dropin_entry_filter_policy_create(bits_per_key: c_int) -> *const c_void;
}

/// The entry points, where the architecture has a tail jump (`cfg(entry_jump)`, set by
/// build.rs): naked functions that jump to the C++ bodies, which then see the program's
/// return address as their own. (rustc exports only Rust's symbols from the library, so the
/// C++ bodies are reached through these.)
#[cfg(entry_jump)]
mod entry_points {
    use super::*;

    /// A naked function's body: the jump to `$body`.
    macro_rules! jump_to {
        ($body:path) => {
            core::arch::naked_asm!(concat!(env!("LEVELDB_BLOOM_DROPIN_JUMP"), " {}"), sym $body)
        };
    }

    /// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name: the signature
    /// is the same at the machine level (an int in, a pointer out).
    #[unsafe(naked)]
    #[unsafe(export_name = "_ZN7leveldb20NewBloomFilterPolicyEi")]
    pub extern "C-unwind" fn new_bloom_filter_policy(bits_per_key: c_int) -> *const c_void {
        jump_to!(leveldb_bloom_dropin_entry_new_bloom_filter_policy)
    }

    /// The drop-in's `leveldb::FilterPolicy` object, for a program that also uses stock
    /// LevelDB's policy in the same process (the benchmark does): the returned pointer is a
    /// `const leveldb::FilterPolicy*` for the caller's string layout, released with
    /// `delete`. Counts like `NewBloomFilterPolicy`.
    #[unsafe(naked)]
    #[unsafe(no_mangle)]
    pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_create(
        bits_per_key: c_int,
    ) -> *const c_void {
        jump_to!(leveldb_bloom_dropin_entry_filter_policy_create)
    }
}

/// Elsewhere the entry points cannot pass on their caller's address: the drop-in cannot
/// tell which string a LevelDB was built with, so each keeps its own policy (said once on
/// standard error and in the statistics file), never a guess.
#[cfg(not(entry_jump))]
mod entry_points {
    use super::*;

    #[unsafe(export_name = "_ZN7leveldb20NewBloomFilterPolicyEi")]
    pub extern "C-unwind" fn new_bloom_filter_policy(bits_per_key: c_int) -> *const c_void {
        leveldb_bloom_dropin_filter_policy_for(bits_per_key, std::ptr::null())
    }

    #[unsafe(no_mangle)]
    pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_create(
        bits_per_key: c_int,
    ) -> *const c_void {
        leveldb_bloom_dropin_filter_policy_for(bits_per_key, std::ptr::null())
    }
}

/// How many policies this library has handed out in place of LevelDB's, per string layout.
static POLICIES_CXX11_STRING: AtomicU64 = AtomicU64::new(0);
static POLICIES_OLD_STRING: AtomicU64 = AtomicU64::new(0);
/// How many calls were handed to the program's own `NewBloomFilterPolicy`, and why the
/// first was.
static FALLBACKS: AtomicU64 = AtomicU64::new(0);
static FALLBACK_REASON: OnceLock<String> = OnceLock::new();

/// The policy object for the LevelDB whose code holds `caller`: the body of
/// `leveldb::NewBloomFilterPolicy(int)` and `leveldb_bloom_dropin_filter_policy_create`
/// (entry.cc), which pass their return address. Built with that LevelDB's string layout;
/// where the layout cannot be told, the program's own `NewBloomFilterPolicy` makes the
/// policy, or, if it has none, NULL (LevelDB's "no filter policy": no filters written, every
/// table read), said once on standard error and in the statistics file. A C++ exception from
/// `new` passes through, as it would from LevelDB's own definition.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_for(
    bits_per_key: c_int,
    caller: *const c_void,
) -> *const c_void {
    let object = LoadedObject::holding(caller);
    let abi = match &object {
        // A panic must not unwind into LevelDB: one here is a layout not told.
        Some(object) => std::panic::catch_unwind(|| caller::string_abi(object))
            .unwrap_or_else(|_| Err("reading its symbols failed".to_owned())),
        None => Err("no loaded object holds the caller's code".to_owned()),
    };
    let new_object = match abi {
        Ok(StringAbi::Cxx11) => {
            POLICIES_CXX11_STRING.fetch_add(1, Relaxed);
            leveldb_bloom_dropin_new_policy_cxx11_string
        }
        Ok(StringAbi::Old) => {
            POLICIES_OLD_STRING.fetch_add(1, Relaxed);
            leveldb_bloom_dropin_new_policy_old_string
        }
        Err(why) => return fall_back(object.as_ref(), bits_per_key, &why),
    };
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
    // object; NULL throws, as LevelDB's own `new` does when memory runs out.
    unsafe { new_object(policy.cast()) }
}

/// The policy of the program's own `NewBloomFilterPolicy`, for a LevelDB whose string
/// layout the drop-in cannot tell; NULL when there is none.
#[cold]
fn fall_back(object: Option<&LoadedObject>, bits_per_key: c_int, why: &str) -> *const c_void {
    FALLBACKS.fetch_add(1, Relaxed);
    let who = object.map_or_else(|| "the caller".to_owned(), LoadedObject::describe);
    let constructor = caller::program_policy_constructor(object);
    let outcome = if constructor.is_some() {
        "its LevelDB keeps its own Bloom policy"
    } else {
        "it has no Bloom policy of its own: no filters"
    };
    let reason = format!("cannot tell which std::string {who} was built with ({why}); {outcome}");
    if FALLBACK_REASON.set(reason.clone()).is_ok() {
        warn(&reason);
    }
    match constructor {
        // SAFETY: the program's own `leveldb::NewBloomFilterPolicy(int)`, which takes any int.
        Some(constructor) => unsafe { constructor(bits_per_key) },
        None => std::ptr::null(),
    }
}

/// The C policy for a program that asked for `bits_per_key`, in the format the environment
/// chose (`format.rs`); Bloom filters when the bits per key are outside what compact filters
/// take. A negative `bits_per_key` (undefined behaviour in LevelDB) is taken as 0: LevelDB's
/// C wrapper cannot handle a NULL policy, and 0 still builds valid filters every reader
/// understands. NULL only when memory runs out.
fn create_policy(bits_per_key: c_int) -> *mut ffi::leveldb_bloom_policy {
    let program_bits = bits_per_key.max(0);
    let choice = format::choice();
    if choice.format == leveldb_bloom::Format::Compact {
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

/// The number of `leveldb::NewBloomFilterPolicy` calls this library served.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_dropin_policies_created() -> u64 {
    POLICIES_CXX11_STRING.load(Relaxed) + POLICIES_OLD_STRING.load(Relaxed)
}

/// Runs when the library is loaded (preloaded, linked, or part of the program): with a
/// statistics file asked for, the file is written at exit whether or not the drop-in ever
/// served (a preload into a program whose LevelDB is compiled in cannot: its calls never
/// leave the executable).
#[used]
#[unsafe(link_section = ".init_array")]
static REGISTER_STATS_FILE_AT_LOAD: extern "C" fn() = register_stats_file_at_exit;

extern "C" fn register_stats_file_at_exit() {
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
        let cxx11 = POLICIES_CXX11_STRING.load(Relaxed);
        let old = POLICIES_OLD_STRING.load(Relaxed);
        let fallbacks = FALLBACKS.load(Relaxed);
        let served = if cxx11 + old > 0 { "yes" } else { "no" };
        let mut text = format!(
            "served={served}\nformat={}\nbits_per_key={bits}\ndropin_policies={}\n\
             dropin_policies_cxx11_string={cxx11}\ndropin_policies_old_string={old}\n\
             fallbacks={fallbacks}\nfilters_built={}\nkeys_added={}\nqueries={}\n\
             no_match={}\n",
            choice.format.name(),
            cxx11 + old,
            stats.filters_built,
            stats.keys_added,
            stats.queries,
            stats.no_match
        );
        if let Some(reason) = FALLBACK_REASON.get() {
            text.push_str(&format!("fallback={reason}\n"));
        }
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
