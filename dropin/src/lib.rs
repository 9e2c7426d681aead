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
mod stats;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

#[cfg(windows)]
use linked_windows as owner;
use owner::{NewPolicyFn, StringAbi, Writer};

// The C API (the capi crate); naming it keeps its exported symbols in this library.
pub use leveldb_bloom_capi as ffi;

/// `leveldb::Slice` (include/leveldb/slice.h): its two members, in order (policy.cc checks
/// that it is `leveldb_bloom_slice`).
type Slice = ffi::leveldb_bloom_slice;

unsafe extern "C-unwind" {
    // policy.cc: a new policy object (a `const leveldb::FilterPolicy*`) that owns `policy`,
    // answers with `filters` (the policy's own C API policy), and calls `create_filter` and
    // `free` with `policy`; throws std::bad_alloc if memory runs out (without freeing).
    fn leveldb_bloom_dropin_object_new(
        policy: *mut c_void,
        filters: *const c_void,
        create_filter: CreateFilterFn,
        free: FreeFn,
    ) -> *const c_void;
    // policy.cc: asks `stock`, a stock LevelDB `FilterPolicy*`, to append its filter of
    // `keys` to `dst`; deletes one. (LevelDB's vtable is C++'s to call.)
    fn leveldb_bloom_dropin_stock_create_filter(
        stock: *const c_void,
        keys: *const Slice,
        n: c_int,
        dst: *mut c_void,
    );
    fn leveldb_bloom_dropin_stock_delete(stock: *const c_void);
    // policy.cc: makes a stock policy with `new` and `bits`, has it append its filter of
    // `keys` to `dst`, and deletes it.
    fn leveldb_bloom_dropin_stock_create_filter_with(
        new: NewPolicyFn,
        bits: c_int,
        keys: *const Slice,
        n: c_int,
        dst: *mut c_void,
    );
    // string_ops.cc, one per layout: the string's size, and its resize (throws as
    // std::string's does), returning its characters.
    fn leveldb_bloom_dropin_string_size_cxx11(s: *const c_void) -> usize;
    fn leveldb_bloom_dropin_string_resize_cxx11(s: *mut c_void, n: usize) -> *mut u8;
    fn leveldb_bloom_dropin_string_size_old(s: *const c_void) -> usize;
    fn leveldb_bloom_dropin_string_resize_old(s: *mut c_void, n: usize) -> *mut u8;
}

/// The policy object's `CreateFilter` (policy.cc): the policy, the calling code's address,
/// LevelDB's keys and their count, LevelDB's string.
type CreateFilterFn =
    unsafe extern "C-unwind" fn(*const Policy, *const c_void, *const Slice, c_int, *mut c_void);
/// The policy object's destructor's part (policy.cc).
type FreeFn = unsafe extern "C" fn(*mut Policy);

/// What one of the drop-in's policy objects (policy.cc) holds on the Rust side.
pub struct Policy {
    /// The C API's policy, which builds and answers.
    filters: *mut ffi::leveldb_bloom_policy,
    /// A stock LevelDB policy (a `leveldb::FilterPolicy*` of the definition the drop-in
    /// displaced, or of the asking code's own), which writes the filters of a LevelDB the
    /// drop-in cannot prove and that has no policy of its own; NULL if none exists.
    stock: *const c_void,
    /// Where no stock policy exists: the layout proven for the code that asked for the
    /// policy, the one LevelDB that can be calling.
    asker: Option<StringAbi>,
    /// The bits per key stock policies are made with.
    stock_bits: c_int,
}

impl Drop for Policy {
    fn drop(&mut self) {
        // SAFETY: made by the C API, released once.
        unsafe { ffi::leveldb_bloom_policy_destroy(self.filters) };
        if !self.stock.is_null() {
            // SAFETY: made by a stock `NewBloomFilterPolicy`, deleted once.
            unsafe { leveldb_bloom_dropin_stock_delete(self.stock) };
        }
    }
}

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
            format::choice();
            leveldb_bloom::instructions();
            #[cfg(unix)]
            {
                let loader = image::Loader::at_load();
                owner::bind_own_strings_at_load(loader);
                DISPLACED.get_or_init(|| {
                    // SAFETY: RTLD_NEXT and a C string; the result is NULL or a definition of
                    // `leveldb::NewBloomFilterPolicy(int)`: an int in, a pointer out.
                    unsafe {
                        let f = libc::dlsym(
                            libc::RTLD_NEXT,
                            c"_ZN7leveldb20NewBloomFilterPolicyEi".as_ptr(),
                        );
                        (!f.is_null()).then(|| std::mem::transmute::<*mut c_void, NewPolicyFn>(f))
                    }
                });
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
    let (stock_new, asker) = match displaced {
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
    let (filters, stock_bits) = create_policy(bits_per_key);
    let filters = if stats::file_wanted() {
        // SAFETY: `filters` is NULL or a live policy, destroyed once here after the copy.
        unsafe {
            let counted = ffi::leveldb_bloom_policy_counted(filters);
            ffi::leveldb_bloom_policy_destroy(filters);
            counted
        }
    } else {
        filters
    };
    let mut policy = Box::new(Policy {
        filters,
        stock: std::ptr::null(),
        asker,
        stock_bits,
    });
    if let Some(new) = stock_new {
        // SAFETY: a definition of `leveldb::NewBloomFilterPolicy(int)`; its `std::bad_alloc`
        // passes through, `policy` released on the way.
        policy.stock = unsafe { new(stock_bits) };
    }
    if policy.filters.is_null() {
        // Out of memory: as LevelDB's own `new` would.
        // SAFETY: `leveldb_bloom_dropin_object_new` throws std::bad_alloc for a NULL policy.
        return unsafe {
            leveldb_bloom_dropin_object_new(
                std::ptr::null_mut(),
                std::ptr::null(),
                create_filter,
                free_policy,
            )
        };
    }
    let filters = policy.filters;
    stats::count_policy();
    let raw = Box::into_raw(policy);
    struct FreeOnUnwind(*mut Policy);
    impl Drop for FreeOnUnwind {
        fn drop(&mut self) {
            // SAFETY: the policy made above, not yet owned by an object.
            drop(unsafe { Box::from_raw(self.0) });
        }
    }
    let guard = FreeOnUnwind(raw);
    // SAFETY: `raw` and `filters` live; the object takes them (or throws, and `guard` frees).
    let object = unsafe {
        leveldb_bloom_dropin_object_new(raw.cast(), filters.cast(), create_filter, free_policy)
    };
    std::mem::forget(guard);
    object
}

/// The policy object's destructor's part: releases the policy.
///
/// # Safety
/// `policy` came from `new_policy_object` and is not used again.
unsafe extern "C" fn free_policy(policy: *mut Policy) {
    if !policy.is_null() {
        // SAFETY: the caller passes ownership.
        drop(unsafe { Box::from_raw(policy) });
    }
}

/// `CreateFilter` for code at `caller`: appends the filter of `keys` to `dst`, that code's
/// `std::string`, written by the drop-in where it has proven the string's layout and
/// library (`owner.rs`), otherwise by stock LevelDB's code. A `std::bad_alloc` from growing
/// the string passes through, as from LevelDB's own policy.
///
/// # Safety
/// `policy` is live; `keys` points to `n` slices of readable bytes (or `n` is 0); `dst` is
/// the calling LevelDB's `std::string`.
unsafe extern "C-unwind" fn create_filter(
    policy: *const Policy,
    caller: *const c_void,
    keys: *const Slice,
    n: c_int,
    dst: *mut c_void,
) {
    // SAFETY: the caller guarantees a live policy.
    let policy = unsafe { &*policy };
    let abi = match owner::writer_for(caller) {
        Writer::Dropin(abi) => abi,
        Writer::Stock(own) => match (own, policy.stock.is_null(), policy.asker) {
            (Some(new), _, _) => {
                // SAFETY: the calling object's own `NewBloomFilterPolicy`, whose policy writes
                // and is deleted; `keys`, `n` and `dst` as this function's caller guarantees.
                unsafe {
                    leveldb_bloom_dropin_stock_create_filter_with(
                        new,
                        policy.stock_bits,
                        keys,
                        n,
                        dst,
                    )
                };
                stats::count_filter_by_stock();
                return;
            }
            (None, false, _) => {
                // SAFETY: the policy's stock object, live while the policy is.
                unsafe { leveldb_bloom_dropin_stock_create_filter(policy.stock, keys, n, dst) };
                stats::count_filter_by_stock();
                return;
            }
            (None, true, Some(abi)) => abi,
            // A policy is made only with a stock object or a proven asker.
            (None, true, None) => StringAbi::Cxx11,
        },
    };
    // SAFETY: as this function's caller guarantees, with `abi` proven for `dst`.
    unsafe { append_filter(policy, abi, keys, n, dst) }
}

/// Appends the filter straight into the string (no buffer of our own, no copy), grown by its
/// own layout's code; the filter every reader answers "may match" if it cannot be built.
///
/// # Safety
/// As `leveldb_bloom_dropin_create_filter`'s, with `dst` a string of layout `abi`.
unsafe fn append_filter(
    policy: &Policy,
    abi: StringAbi,
    keys: *const Slice,
    n: c_int,
    dst: *mut c_void,
) {
    let (size, resize): (
        unsafe extern "C-unwind" fn(*const c_void) -> usize,
        unsafe extern "C-unwind" fn(*mut c_void, usize) -> *mut u8,
    ) = match abi {
        StringAbi::Cxx11 => (
            leveldb_bloom_dropin_string_size_cxx11,
            leveldb_bloom_dropin_string_resize_cxx11,
        ),
        StringAbi::Old => (
            leveldb_bloom_dropin_string_size_old,
            leveldb_bloom_dropin_string_resize_old,
        ),
    };
    let num_keys = usize::try_from(n).unwrap_or(0);
    // SAFETY: `dst` is a live string of this layout.
    let start = unsafe { size(dst) };
    // SAFETY: a live policy.
    let len = unsafe { ffi::leveldb_bloom_filter_len(policy.filters, num_keys) };
    if len != 0 {
        // SAFETY: grows the string by `len` bytes and returns its characters, of which
        // `start..start + len` are then written.
        unsafe {
            let at = resize(dst, start + len).add(start);
            let mut written = 0;
            let status = ffi::leveldb_bloom_create_filter_slices(
                policy.filters,
                keys,
                num_keys,
                at,
                len,
                &mut written,
            );
            if status == ffi::leveldb_bloom_status::LEVELDB_BLOOM_OK as c_int && written == len {
                return;
            }
        }
    }
    // What every LevelDB reader answers "may match": 0 probes.
    // SAFETY: grows the string by 2 bytes and writes them.
    unsafe {
        let at = resize(dst, start + 2).add(start);
        at.write(0);
        at.add(1).write(0);
    }
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
