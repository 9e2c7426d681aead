//! `libleveldb_bloom_dropin`: defines `leveldb::NewBloomFilterPolicy(int)` so that programs
//! written for stock LevelDB get leveldb-bloom's policy without a source change, through
//! `LD_PRELOAD`, by linking this library ahead of libleveldb, or statically ahead of
//! `libleveldb.a`. LevelDB's `leveldb_filterpolicy_create_bloom` calls that function too, so
//! C callers are served as well. The library also carries the whole leveldb-bloom C API, and
//! depends on no LevelDB: it serves the one in the process, whichever it is (LevelDB 1.20 to
//! 1.23, shared or bundled, built with either of libstdc++'s string layouts).
//!
//! **Unproven means stock.** The drop-in writes a LevelDB's filter string only where it has
//! proven how (`owner.rs`); everywhere else that filter is written by exactly the code stock
//! LevelDB would have run: the calling LevelDB's own `NewBloomFilterPolicy`'s policy, or the
//! policy of the definition the drop-in displaced (the next one in lookup order), made with
//! the program's bits per key and kept with the drop-in's policy object. Only where no other
//! definition exists at all (the drop-in linked in place of the program's only one) and the
//! string of the code asking cannot be proven does `NewBloomFilterPolicy` return NULL, which
//! LevelDB takes as "no filter policy". Nothing the drop-in does stops the program.
//!
//! **Nothing held against it.** What the drop-in needs of the dynamic loader (its own
//! object, the definition it displaced, where its own string code is bound) and of the
//! environment (`LEVELDB_BLOOM_*`) is taken once, while it is loaded; making a policy,
//! `CreateFilter` and `KeyMayMatch` take no lock and call nothing that waits on the loader,
//! so that no `fork`, `dlopen` initializer or `setenv` in another thread can stop them.
//!
//! Setting `LEVELDB_BLOOM_STATS_FILE` makes the drop-in's policies count their work and the
//! process write the statistics to that file at exit (`stats.rs`). `LEVELDB_BLOOM_FORMAT`
//! and `LEVELDB_BLOOM_BITS_PER_KEY` choose the filters it builds (`format.rs`).

mod format;
#[cfg(unix)]
mod image;
#[cfg(windows)]
mod linked_windows;
#[cfg(unix)]
mod owner;
mod policy;
mod stats;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

use leveldb_bloom::AnyPolicy;
#[cfg(windows)]
use linked_windows as owner;
use owner::NewPolicyFn;

// The C API (the capi crate); naming it keeps its exported symbols in this library.
pub use leveldb_bloom_capi as ffi;

/// The definition of `leveldb::NewBloomFilterPolicy` that the drop-in displaced: the next
/// one after it in lookup order (taken at load).
static DISPLACED: OnceLock<Option<NewPolicyFn>> = OnceLock::new();

/// Takes, once, what the drop-in needs of the loader and the environment. Runs when the
/// library is loaded (preloaded, linked, or part of the program), and at the first policy in
/// case a static link left out the member holding the load-time call.
extern "C" fn at_load() {
    static AT_LOAD: Once = Once::new();
    AT_LOAD.call_once(|| {
        let _ = std::panic::catch_unwind(|| {
            stats::at_load();
            let choice = format::choice();
            stats::describe_format(choice.format.name(), choice.bits_per_key);
            leveldb_bloom::instructions();
            #[cfg(unix)]
            {
                let loader = image::Loader::at_load();
                owner::bind_own_strings_at_load(loader);
                DISPLACED.get_or_init(displaced);
            }
        });
    });
}

/// `leveldb::NewBloomFilterPolicy(int)`'s symbol.
#[cfg(unix)]
const NEW_POLICY: &std::ffi::CStr = c"_ZN7leveldb20NewBloomFilterPolicyEi";

/// The definition of `NewBloomFilterPolicy` the drop-in displaced: the next one after it in
/// lookup order, or, where the drop-in was loaded after it (by `dlopen`), the first one.
/// Never another copy of the drop-in (two preloaded, or one preloaded over one linked):
/// each would take the other's for stock's and call it, forever. Where those two lookups
/// find only copies of the drop-in, the first definition of a loaded object that is not one.
#[cfg(unix)]
fn displaced() -> Option<NewPolicyFn> {
    let own = new_bloom_filter_policy as *const () as usize;
    let stock = |f: *mut c_void| !f.is_null() && f as usize != own && !in_a_drop_in(f);
    [libc::RTLD_NEXT, libc::RTLD_DEFAULT]
        .into_iter()
        // SAFETY: a pseudo-handle and a C string; the result is NULL or a definition of
        // `leveldb::NewBloomFilterPolicy(int)`.
        .map(|scope| unsafe { libc::dlsym(scope, NEW_POLICY.as_ptr()) })
        .find(|&f| stock(f))
        .or_else(|| {
            loaded_objects()
                .into_iter()
                .find_map(|name| defined_in(&name).filter(|&f| stock(f)))
        })
        // SAFETY: such a definition: an int in, a pointer out.
        .map(|f| unsafe { std::mem::transmute::<*mut c_void, NewPolicyFn>(f) })
}

/// The names of the loaded shared objects, in the order they were loaded (the program's
/// own, which has no name, left out). Asked of the loader at load only.
#[cfg(unix)]
fn loaded_objects() -> Vec<std::ffi::CString> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        names: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid `info`, and `names` is the vector below.
        let (info, names) = unsafe { (&*info, &mut *names.cast::<Vec<std::ffi::CString>>()) };
        if !info.dlpi_name.is_null() {
            // SAFETY: a loaded object's name, NUL-terminated.
            let name = unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        0
    }
    let mut names: Vec<std::ffi::CString> = Vec::new();
    // SAFETY: the callback only reads `info` and pushes to `names`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut names).cast()) };
    names
}

/// The definition of `NewBloomFilterPolicy` the loaded object `name` itself holds, if any.
#[cfg(unix)]
fn defined_in(name: &std::ffi::CStr) -> Option<*mut c_void> {
    // SAFETY: RTLD_NOLOAD loads nothing; the handle only adds a reference, dropped below.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: a handle from `dlopen` and a C string.
    let f = unsafe { libc::dlsym(handle, NEW_POLICY.as_ptr()) };
    // SAFETY: the handle `dlopen` returned, closed once.
    unsafe { libc::dlclose(handle) };
    // A handle's lookup also searches the object's dependencies: only its own counts.
    (!f.is_null()
        && object_of(f).is_some_and(|info| {
            // SAFETY: `dladdr` names the object with a NUL-terminated string it keeps.
            !info.dli_fname.is_null() && unsafe { std::ffi::CStr::from_ptr(info.dli_fname) } == name
        }))
    .then_some(f)
}

/// What `dladdr` says of the object holding `address`.
#[cfg(unix)]
fn object_of(address: *const c_void) -> Option<libc::Dl_info> {
    // SAFETY: `Dl_info` is plain data, filled by `dladdr` when it returns non-zero.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address may be asked about; `info` is writable.
    (unsafe { libc::dladdr(address, &mut info) } != 0).then_some(info)
}

/// Whether the object defining `f` is a drop-in: it defines the drop-in's own entry point
/// too. Asked of the loader at load only. An object the loader cannot name is not one.
#[cfg(unix)]
fn in_a_drop_in(f: *mut c_void) -> bool {
    let Some(info) = object_of(f) else {
        return false;
    };
    if info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: a loaded object's name, from `dladdr`; RTLD_NOLOAD loads nothing, and the
    // handle it returns only adds a reference, dropped below.
    let handle = unsafe { libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: a handle from `dlopen` and a C string.
    let entry = unsafe {
        libc::dlsym(
            handle,
            c"leveldb_bloom_dropin_filter_policy_create".as_ptr(),
        )
    };
    let same_object =
        !entry.is_null() && object_of(entry).is_some_and(|found| found.dli_fbase == info.dli_fbase);
    // SAFETY: the handle `dlopen` returned, closed once.
    unsafe { libc::dlclose(handle) };
    same_object
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

/// A new policy object for `bits_per_key` asked for by the code at `caller`: NULL only where
/// no other definition of `NewBloomFilterPolicy` exists and that code's string cannot be
/// proven (LevelDB then has no filter policy: no filters written, every table read). Memory
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

fn new_policy_object(bits_per_key: c_int, caller: *const c_void) -> *const c_void {
    at_load();
    let displaced = DISPLACED.get().copied().flatten();
    let (stock_new, proven) = match displaced {
        Some(stock) => (Some(stock), None),
        None => match std::panic::catch_unwind(|| owner::asker_stock_or_proof(caller)) {
            Ok(Ok(found)) => found,
            Ok(Err(why)) => {
                stats::count_refused(&format!(
                    "{why}; no filter policy: no definition of NewBloomFilterPolicy but the \
                     drop-in's exists"
                ));
                return std::ptr::null();
            }
            Err(_) => {
                stats::count_refused("the drop-in failed reading its symbols; no filter policy");
                return std::ptr::null();
            }
        },
    };
    let (format, stock_bits) = create_policy(bits_per_key);
    policy::new_object(format, stock_bits, stock_new, proven)
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

/// The number of `leveldb::NewBloomFilterPolicy` calls this library served.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_bloom_dropin_policies_created() -> u64 {
    stats::counts().policies
}
