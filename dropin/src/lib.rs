//! `libleveldb_bloom_dropin`: defines `leveldb::NewBloomFilterPolicy(int)` so that programs
//! written for stock LevelDB get leveldb-bloom's policy without a source change, through
//! `LD_PRELOAD`, by linking this library ahead of libleveldb, or statically ahead of
//! `libleveldb.a`. LevelDB's `leveldb_filterpolicy_create_bloom` calls that function too, so
//! C callers are served as well. The library also carries the whole leveldb-bloom C API, and
//! depends on no LevelDB: it serves the one in the process, whichever it is (LevelDB 1.20 to
//! 1.23, shared or bundled, built with either of libstdc++'s string layouts), and writes a
//! LevelDB's strings only where it has proven how (`owner.rs`).
//!
//! Setting `LEVELDB_BLOOM_STATS_FILE` makes the drop-in's policies count their work and the
//! process write the global statistics to that file at exit, also when the drop-in served
//! nothing, so that a program that knows nothing of leveldb-bloom can be shown to use it, or
//! not (not in set-user-ID or other secure-execution programs, and never through a symlink).
//! Unset, nothing is counted. `LEVELDB_BLOOM_FORMAT` and `LEVELDB_BLOOM_BITS_PER_KEY` choose
//! the filters it builds (`format.rs`). Nothing the drop-in does can end the program it
//! serves: a warning that standard error does not take is dropped, a failed statistics file
//! is not written. (The one stop, before a table without a filter could be written, is in a
//! case LevelDB as built cannot reach: policy.cc.)

mod format;
#[cfg(unix)]
mod image;
#[cfg(windows)]
mod linked_windows;
#[cfg(unix)]
mod owner;
mod stats;

use std::ffi::{OsString, c_int, c_void};
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Once, OnceLock};
use std::time::SystemTime;

#[cfg(windows)]
use linked_windows as owner;

// The C API (the capi crate); naming it keeps its exported symbols in this library.
pub use leveldb_bloom_capi as ffi;

unsafe extern "C-unwind" {
    // Defined in policy.cc: a new `leveldb::FilterPolicy` that owns `policy` and answers
    // through the C API, whose `CreateFilter` asks owner.rs which LevelDB calls it; throws
    // `std::bad_alloc` if `policy` is NULL or the object cannot be allocated. A LevelDB the
    // drop-in declines gets its filters from its own policy, made with
    // `bloom_bits_per_key`. (`policy` is a `leveldb_bloom_policy*`; opaque here.)
    fn leveldb_bloom_dropin_new_policy(
        policy: *mut c_void,
        bloom_bits_per_key: c_int,
        hooks: *const Hooks,
    ) -> *const c_void;
}

/// The functions the policy object calls (string_ops.h's `leveldb_bloom_dropin_hooks`),
/// handed over rather than exported.
#[repr(C)]
struct Hooks {
    decide: extern "C" fn(*const c_void) -> *const owner::Decision,
    count_own_filter: extern "C" fn(),
}

static HOOKS: Hooks = Hooks {
    decide: owner::decide_for,
    count_own_filter: stats::count_own_filter,
};

/// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name: the signature is
/// the same at the machine level (an int in, a pointer out).
#[unsafe(export_name = "_ZN7leveldb20NewBloomFilterPolicyEi")]
pub extern "C-unwind" fn new_bloom_filter_policy(bits_per_key: c_int) -> *const c_void {
    leveldb_bloom_dropin_filter_policy_create(bits_per_key)
}

/// The drop-in's `leveldb::FilterPolicy` object, for a program that also uses stock
/// LevelDB's policy in the same process (the benchmark does): a `const
/// leveldb::FilterPolicy*`, released with `delete`. Counts like `NewBloomFilterPolicy`.
///
/// Whichever LevelDB calls the object's `CreateFilter`, the drop-in writes that LevelDB's
/// string only where it has proven how (owner.rs); elsewhere that LevelDB's own policy writes
/// its filters. One case is decided here: the drop-in linked into the program itself (the
/// static route), where it replaced the program's LevelDB's own policy. If it cannot prove
/// the program's string there, it returns NULL, which LevelDB takes as "no filter policy"
/// (no filters written, every table read, nothing lost), said once on standard error and in
/// the statistics. A C++ exception from `new` passes through, as it would from LevelDB's own
/// definition.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_create(
    bits_per_key: c_int,
) -> *const c_void {
    // Also here, not only at load: a static link may leave out the archive member that holds
    // the load-time registration (the Windows drop-in is static only). Runs once either way.
    register_stats_file_at_exit();
    #[cfg(unix)]
    if let Some(own) = image::LoadedObject::own().filter(image::LoadedObject::is_program) {
        static PROGRAM: OnceLock<Result<owner::StringAbi, String>> = OnceLock::new();
        let proven = PROGRAM.get_or_init(|| {
            std::panic::catch_unwind(|| owner::provable_string_abi(&own))
                .unwrap_or_else(|_| Err("the drop-in failed reading its symbols".to_owned()))
                .inspect_err(|why| {
                    stats::count_declined(&format!(
                        "the LevelDB in the program ({why}); no filter policy: \
                         the drop-in replaced its own"
                    ))
                })
        });
        if proven.is_err() {
            return std::ptr::null();
        }
    }
    stats::count_policy();
    let (policy, bloom_bits) = create_policy(bits_per_key);
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
    unsafe { leveldb_bloom_dropin_new_policy(policy.cast(), bloom_bits, &HOOKS) }
}

/// The C policy for a program that asked for `bits_per_key`, in the format the environment
/// chose (`format.rs`), and the bits per key of the Bloom filters a declined LevelDB's own
/// policy writes in its place; Bloom filters when the bits per key are outside what compact
/// filters take. A negative `bits_per_key` (undefined behaviour in LevelDB) is taken as 0:
/// LevelDB's C wrapper cannot handle a NULL policy, and 0 still builds valid filters every
/// reader understands. The policy is NULL only when memory runs out.
fn create_policy(bits_per_key: c_int) -> (*mut ffi::leveldb_bloom_policy, c_int) {
    let program_bits = bits_per_key.max(0);
    let choice = format::choice();
    if choice.format == leveldb_bloom::Format::Compact {
        let bits = choice.bits_per_key.unwrap_or(f64::from(program_bits));
        if leveldb_bloom::CompactPolicy::new(bits).is_ok() {
            return (ffi::leveldb_bloom_policy_create_compact(bits), program_bits);
        }
        warn_once_compact_refused(bits);
    }
    let bits = choice
        .bits_per_key
        .map_or(program_bits, |bits| bits as c_int);
    (ffi::leveldb_bloom_policy_create(bits), bits)
}

/// One line, the first time a program's own bits per key are outside what compact filters
/// take: its policies then build Bloom filters.
#[cold]
fn warn_once_compact_refused(bits: f64) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        stats::warn(&format!(
            "compact filters take 0 to {} bits per key, not {bits}; building bloom filters",
            leveldb_bloom::compact::MAX_BITS_PER_KEY
        ));
    });
}

/// The number of `leveldb::NewBloomFilterPolicy` calls this library served.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_dropin_policies_created() -> u64 {
    stats::counts().policies
}

/// When the library was loaded in this process: a statistics file written since then by
/// another process (a child) is not overwritten by one in which the drop-in did nothing.
static LOADED_AT: OnceLock<SystemTime> = OnceLock::new();

/// Runs when the library is loaded (preloaded, linked, or part of the program): with a
/// statistics file asked for, the file is written at exit whether or not the drop-in ever
/// served (a preload into a program whose LevelDB is compiled in cannot: its calls never
/// leave the executable).
#[used]
#[cfg_attr(unix, unsafe(link_section = ".init_array"))]
#[cfg_attr(windows, unsafe(link_section = ".CRT$XCU"))]
static REGISTER_STATS_FILE_AT_LOAD: extern "C" fn() = register_stats_file_at_exit;

extern "C" fn register_stats_file_at_exit() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        LOADED_AT.get_or_init(SystemTime::now);
        if stats_file().is_some() {
            // SAFETY: `write_stats_file` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(write_stats_file) };
        }
    });
}

/// `LEVELDB_BLOOM_STATS_FILE`, with `%p` replaced by the process's ID, unless the process
/// runs in secure-execution mode (set-user-ID, set-group-ID or with capabilities: the
/// kernel's AT_SECURE), where the environment is its caller's and must not name files the
/// program writes.
#[cfg(unix)]
fn stats_file() -> Option<OsString> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    // SAFETY: getauxval has no preconditions; an absent entry reads as 0.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    if secure {
        return None;
    }
    let name = std::env::var_os("LEVELDB_BLOOM_STATS_FILE")?;
    let bytes = name.as_bytes();
    if !bytes.windows(2).any(|w| w == b"%p") {
        return Some(name);
    }
    let pid = std::process::id().to_string();
    let mut out = Vec::with_capacity(bytes.len() + pid.len());
    let mut rest = bytes;
    while let Some(at) = rest.windows(2).position(|w| w == b"%p") {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(pid.as_bytes());
        rest = &rest[at + 2..];
    }
    out.extend_from_slice(rest);
    Some(OsString::from_vec(out))
}

/// `LEVELDB_BLOOM_STATS_FILE`, with `%p` replaced by the process's ID (Windows: a name that
/// is not Unicode is taken as it is).
#[cfg(windows)]
fn stats_file() -> Option<OsString> {
    let name = std::env::var_os("LEVELDB_BLOOM_STATS_FILE")?;
    match name.to_str() {
        Some(text) if text.contains("%p") => {
            Some(text.replace("%p", &std::process::id().to_string()).into())
        }
        _ => Some(name),
    }
}

/// The statistics file's text.
fn stats_text() -> String {
    let stats = leveldb_bloom::global_stats();
    let choice = format::choice();
    let bits = choice
        .bits_per_key
        .map_or_else(|| "program".to_owned(), |bits| bits.to_string());
    let counts = stats::counts();
    let (policies, cxx11, old) = (
        counts.policies,
        counts.served_cxx11_string,
        counts.served_old_string,
    );
    let declined = counts.declined;
    let served = match (policies > 0, declined.is_empty(), cxx11 + old > 0) {
        (false, true, _) => "no",
        (true, true, _) => "yes",
        (_, false, true) => "partly",
        (_, false, false) => "declined",
    };
    let mut text = format!(
        "served={served}\nformat={}\nbits_per_key={bits}\ndropin_policies={policies}\n\
         leveldbs_cxx11_string={cxx11}\nleveldbs_old_string={old}\nleveldbs_declined={}\n\
         filters_built={}\nfilters_built_by_own_policy={}\nkeys_added={}\nqueries={}\n\
         no_match={}\n",
        choice.format.name(),
        declined.len(),
        stats.filters_built,
        counts.filters_by_own_policy,
        stats.keys_added,
        stats.queries,
        stats.no_match
    );
    for reason in declined {
        text.push_str(&format!("declined={reason}\n"));
    }
    text
}

/// Writes `name=value` lines of the global statistics; failures are ignored (the process is
/// exiting, and statistics must never break it). A symlink is not followed, and a FIFO no
/// reader holds open is not waited for. A process in which the drop-in made no policy and
/// declined no LevelDB (a shell or `timeout` that started the program, say) leaves a file
/// written after it loaded the drop-in alone: that is its child's word.
extern "C" fn write_stats_file() {
    let _ = std::panic::catch_unwind(|| {
        let Some(path) = stats_file() else {
            return;
        };
        let counts = stats::counts();
        let idle = counts.policies == 0 && counts.declined.is_empty();
        if idle
            && let (Some(loaded), Ok(written)) = (
                LOADED_AT.get(),
                std::fs::symlink_metadata(&path).and_then(|m| m.modified()),
            )
            && written >= *loaded
        {
            return;
        }
        let text = stats_text();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        let file = options.open(path);
        if let Ok(mut file) = file {
            let _ = file.write_all(text.as_bytes());
        }
    });
}
