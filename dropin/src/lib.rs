//! `libleveldb_bloom_dropin`: defines `leveldb::NewBloomFilterPolicy(int)` so that programs
//! written for stock LevelDB get leveldb-bloom's policy without a source change, through
//! `LD_PRELOAD`, by linking this library ahead of libleveldb, or statically ahead of
//! `libleveldb.a`. LevelDB's `leveldb_filterpolicy_create_bloom` calls that function too, so
//! C callers are served as well. The library also carries the whole leveldb-bloom C API, and
//! depends on no LevelDB: it serves the one in the process, whichever it is (LevelDB 1.20 to
//! 1.23, shared or bundled, built with any standard library).
//!
//! **LevelDB's own code writes LevelDB's strings.** A policy's `CreateFilter` appends to a
//! `std::string` of the calling LevelDB's, whose layout and library the drop-in need not
//! know: the LevelDB's own C API wrapper appends what the C API's callback builds, and a
//! LevelDB without a C API has its own Bloom policy (the definition the drop-in displaced)
//! write Bloom filters, whose bytes are the format's (`policy.rs`). The drop-in answers the
//! queries, and writes a string itself only for a LevelDB linked with it that has no other
//! code to write with. It serves only a LevelDB whose own Bloom policy speaks the format
//! (`speaks.rs`); another gets that policy unchanged.
//!
//! **Nothing held against it.** What the drop-in needs of the dynamic loader (the definition
//! it displaced) and of the environment (`LEVELDB_BLOOM_*`) is taken once, while it is loaded;
//! making a policy, `CreateFilter` and `KeyMayMatch` take no lock that another thread can hold
//! against them and call nothing that waits on the loader (`image.rs`), so that no `fork`,
//! `dlopen` initializer or `setenv` in another thread can stop them.
//!
//! Setting `LEVELDB_BLOOM_STATS_FILE` makes the drop-in's policies count their work and the
//! process write the statistics to that file (`stats.rs`). `LEVELDB_BLOOM_FORMAT` and
//! `LEVELDB_BLOOM_BITS_PER_KEY` choose the filters it builds (`format.rs`).

mod format;
#[cfg(unix)]
mod image;
mod leveldb;
mod policy;
mod speaks;
mod stats;

use std::ffi::{c_int, c_void};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use leveldb_bloom::AnyPolicy;

// The C API (the capi crate); naming it keeps its exported symbols in this library.
pub use leveldb_bloom_capi as ffi;

/// Takes, once, what the drop-in needs of the loader and the environment. Runs when the
/// library is loaded (preloaded, linked, or part of the program), and at the first policy in
/// case a static link left out the member holding the load-time call.
extern "C" fn at_load() {
    static AT_LOAD: Once = Once::new();
    AT_LOAD.call_once(|| {
        let _ = std::panic::catch_unwind(|| {
            stats::at_load();
            let choice = format::choice();
            stats::chosen(choice.format, choice.bits_per_key);
            leveldb_bloom::instructions();
            speaks::at_load();
            #[cfg(unix)]
            {
                leveldb::at_load(image::Loader::at_load());
            }
        });
    });
}

#[used]
#[cfg_attr(unix, unsafe(link_section = ".init_array"))]
#[cfg_attr(windows, unsafe(link_section = ".CRT$XCU"))]
static AT_LOAD: extern "C" fn() = at_load;

/// The instructions that pass the return address (the asking code's) as the second argument
/// of `make_policy`, leaving the first and the stack as the caller left them, and jump.
macro_rules! pass_return_address_and_jump {
    () => {
        core::arch::naked_asm!(
            pass_return_address!(),
            make = sym make_policy
        )
    };
}
#[cfg(all(target_arch = "x86_64", not(windows)))]
macro_rules! pass_return_address {
    () => {
        "mov rsi, [rsp]\njmp {make}"
    };
}
#[cfg(all(target_arch = "x86_64", windows))]
macro_rules! pass_return_address {
    () => {
        "mov rdx, [rsp]\njmp {make}"
    };
}
// i386: `make_policy` is fastcall (two arguments in ECX and EDX, none on the stack, so that
// the caller's own argument stays the caller's to pop).
#[cfg(target_arch = "x86")]
macro_rules! pass_return_address {
    () => {
        "mov ecx, [esp + 4]\nmov edx, [esp]\njmp {make}"
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! pass_return_address {
    () => {
        "mov x1, x30\nb {make}"
    };
}
#[cfg(target_arch = "s390x")]
macro_rules! pass_return_address {
    () => {
        "lgr %r3, %r14\njg {make}"
    };
}

/// `leveldb::NewBloomFilterPolicy(int)`, under its Itanium C++ ABI name (the signature is the
/// same at the machine level: an int in, a pointer out): `make_policy`, told which code asked.
#[unsafe(naked)]
#[unsafe(export_name = "_ZN7leveldb20NewBloomFilterPolicyEi")]
pub extern "C-unwind" fn new_bloom_filter_policy(_bits_per_key: c_int) -> *const c_void {
    pass_return_address_and_jump!()
}

/// The drop-in's `leveldb::FilterPolicy` object, for a program that also uses stock
/// LevelDB's policy in the same process (the benchmark does): a `const
/// leveldb::FilterPolicy*`, released with `delete`. Made as `NewBloomFilterPolicy` makes it.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn leveldb_bloom_dropin_filter_policy_create(
    _bits_per_key: c_int,
) -> *const c_void {
    pass_return_address_and_jump!()
}

/// A new policy object for `bits_per_key` asked for by the code at `caller` (`policy.rs`
/// says which): NULL only where no code of the LevelDB's can write its strings and the drop-in
/// may not (LevelDB then has no filter policy: no filters written, every table read). Memory
/// running out throws `std::bad_alloc`, as LevelDB's own `new` would; so does a stock
/// definition's.
#[cfg(target_arch = "x86")]
extern "fastcall-unwind" fn make_policy(
    bits_per_key: c_int,
    caller: *const c_void,
) -> *const c_void {
    new_policy_object(bits_per_key, caller)
}
#[cfg(not(target_arch = "x86"))]
extern "C-unwind" fn make_policy(bits_per_key: c_int, caller: *const c_void) -> *const c_void {
    new_policy_object(bits_per_key, caller)
}

#[inline(never)]
fn new_policy_object(bits_per_key: c_int, caller: *const c_void) -> *const c_void {
    at_load();
    let (format, stock_bits) = create_policy(bits_per_key);
    let leveldb = std::panic::catch_unwind(|| leveldb::asked_by(caller))
        .unwrap_or_else(|_| Err("the drop-in failed reading the loaded objects".to_owned()));
    policy::for_leveldb(format, stock_bits, leveldb)
}

/// The policy for a program that asked for `bits_per_key`, in the format the environment
/// chose (`format.rs`), and the bits per key of the Bloom filters stock policies write in the
/// drop-in's place; Bloom filters when the bits per key are outside what compact filters
/// take. A negative `bits_per_key` (undefined behaviour in LevelDB) is taken as 0: LevelDB's
/// C wrapper cannot handle a NULL policy, and 0 still builds valid filters every reader
/// understands.
fn create_policy(bits_per_key: c_int) -> (AnyPolicy, c_int) {
    let program_bits = bits_per_key.max(0);
    let choice = format::choice();
    if choice.format == leveldb_bloom::Format::Compact {
        let bits = choice.bits_per_key.unwrap_or(f64::from(program_bits));
        if let Ok(compact) = leveldb_bloom::CompactPolicy::new(bits) {
            return (AnyPolicy::Compact(compact), program_bits);
        }
        warn_once_compact_refused(bits);
    }
    let bits = choice
        .bits_per_key
        .map_or(program_bits, |bits| bits as c_int);
    // Never taken: `bits` is not negative.
    const TEN: leveldb_bloom::BloomPolicy = match leveldb_bloom::BloomPolicy::new(10) {
        Ok(policy) => policy,
        Err(_) => panic!("10 bits per key is valid"),
    };
    let bloom = leveldb_bloom::BloomPolicy::new(bits).unwrap_or(TEN);
    (AnyPolicy::Bloom(bloom), bits)
}

/// One line, the first time a program's own bits per key are outside what compact filters
/// take: its policies then build Bloom filters.
#[cold]
fn warn_once_compact_refused(bits: f64) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        stats::warn(&format!(
            "compact filters take 0 to {} bits per key, not {bits}; building bloom filters",
            leveldb_bloom::compact::MAX_BITS_PER_KEY
        ));
    }
}

/// The number of `leveldb::NewBloomFilterPolicy` calls this library answered.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_dropin_policies_created() -> u64 {
    stats::policies()
}
