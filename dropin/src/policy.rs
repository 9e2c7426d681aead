//! The policy a LevelDB gets: the drop-in's object (policy.cc), which answers every query
//! with the C API's policy (`leveldb_bloom_policy`), and whose filters LevelDB's own code
//! appends to LevelDB's strings wherever it has some:
//!
//! - **its C API** (`leveldb_filterpolicy_create`): a wrapper of LevelDB's over the C API's
//!   callbacks, which the object asks for each filter; the wrapper appends what the callback
//!   builds, with LevelDB's own string code. Both formats, and the static route.
//! - **else its own Bloom policy** (the definition the drop-in displaced), for Bloom filters:
//!   by the format, the bytes the drop-in would have built. Asked for compact filters, such a
//!   LevelDB gets Bloom filters too: nothing of its own writes compact ones, and the drop-in
//!   writes no string of a loaded LevelDB's. The compact policy answers them, as LevelDB does.
//! - **else, on the static route, the drop-in**: a link that left LevelDB's C API out has
//!   nothing else to write with; the drop-in and that LevelDB are one link with one
//!   libstdc++, and the layout is the one LevelDB's own functions were linked in
//!   (`leveldb.rs`). Else no policy (NULL, said and counted).
//!
//! A LevelDB whose Bloom policy does not speak the format (`speaks.rs`) gets that policy,
//! unchanged.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use leveldb_bloom::AnyPolicy;
use leveldb_bloom_capi as capi;
use leveldb_bloom_capi::leveldb_bloom_policy;

#[cfg(unix)]
use crate::leveldb::StringLayout;
use crate::leveldb::{CreateFn, LevelDb};
use crate::{speaks, stats};

/// `leveldb::Slice` (include/leveldb/slice.h): its two members, in order (policy.cc checks
/// that it is `leveldb_bloom_slice`).
pub(crate) type Slice = capi::leveldb_bloom_slice;

/// The object's `CreateFilter`: the policy, LevelDB's keys and their count, LevelDB's string.
type CreateFilterFn = unsafe extern "C-unwind" fn(*const Policy, *const Slice, c_int, *mut c_void);
/// The object's destructor's part.
type FreeFn = unsafe extern "C" fn(*mut Policy);

// policy.cc keeps the policy, and the C API policy `query` takes, as opaque pointers that it
// only hands back to Rust: their layouts are Rust's own, though Rust 1.89 lints them.
#[allow(improper_ctypes)]
unsafe extern "C-unwind" {
    // policy.cc: a new policy object (a `const leveldb::FilterPolicy*`) that owns `policy`,
    // answers with `answers` and calls `create_filter` and `free` with `policy`; throws
    // std::bad_alloc if memory runs out (the caller then still owns `policy`).
    fn leveldb_bloom_dropin_object_new(
        policy: *mut c_void,
        answers: *const c_void,
        query: capi::Query,
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
}

#[cfg(unix)]
unsafe extern "C-unwind" {
    // string_ops.cc, one per layout: the string's size, and its resize (throws as
    // std::string's does), returning its characters.
    fn leveldb_bloom_dropin_string_size_cxx11(s: *const c_void) -> usize;
    fn leveldb_bloom_dropin_string_resize_cxx11(s: *mut c_void, n: usize) -> *mut u8;
    fn leveldb_bloom_dropin_string_size_old(s: *const c_void) -> usize;
    fn leveldb_bloom_dropin_string_resize_old(s: *mut c_void, n: usize) -> *mut u8;
}

/// What one policy object of the drop-in's holds.
struct Policy {
    /// The C API's policy, which answers (and counts, when a statistics file is asked for).
    answers: Answers,
    writer: Writer,
}

/// Who writes the filters of the drop-in's object.
enum Writer {
    /// The LevelDB's own C API wrapper over the C API's callbacks (owned; it counts what it
    /// builds).
    CApi(Stock),
    /// The LevelDB's own Bloom policy (owned).
    Stock(Stock),
    /// The drop-in, in the string layout of the LevelDB linked with it.
    #[cfg(unix)]
    Own(StringLayout),
}

/// A C API policy, owned: made for a format, counting its work where a statistics file is
/// asked for.
struct Answers(NonNull<leveldb_bloom_policy>);

impl Answers {
    /// The C API's policy for `format`; `None` if memory runs out.
    fn new(format: AnyPolicy) -> Option<Answers> {
        let plain = match format {
            AnyPolicy::Bloom(bloom) => capi::leveldb_bloom_policy_create(bloom.bits_per_key()),
            AnyPolicy::Compact(compact) => {
                capi::leveldb_bloom_policy_create_compact(compact.bits_per_key())
            }
        };
        let plain = Answers(NonNull::new(plain)?);
        if !stats::file_wanted() {
            return Some(plain);
        }
        // SAFETY: a live policy; the counting one is new and owned.
        NonNull::new(unsafe { capi::leveldb_bloom_policy_counted(plain.0.as_ptr()) }).map(Answers)
    }

    fn as_ptr(&self) -> *mut leveldb_bloom_policy {
        self.0.as_ptr()
    }

    /// Hands the policy over to an owner that destroys it (LevelDB's C wrapper).
    fn into_raw(self) -> *mut leveldb_bloom_policy {
        std::mem::ManuallyDrop::new(self).0.as_ptr()
    }
}

impl Drop for Answers {
    fn drop(&mut self) {
        // SAFETY: owned, destroyed once.
        unsafe { capi::leveldb_bloom_policy_destroy(self.0.as_ptr()) };
    }
}

/// A stock `leveldb::FilterPolicy*`, owned.
struct Stock(NonNull<c_void>);

impl Stock {
    /// The policy `new_policy` (a LevelDB's `NewBloomFilterPolicy`) makes for `bits`; `None`
    /// if it makes none. Its `std::bad_alloc` passes through.
    fn made_by(new_policy: crate::leveldb::NewPolicyFn, bits: c_int) -> Option<Stock> {
        // SAFETY: a definition of `leveldb::NewBloomFilterPolicy(int)`.
        NonNull::new(unsafe { new_policy(bits) }.cast_mut()).map(Stock)
    }

    /// Hands the policy over (to the program, unchanged).
    fn into_raw(self) -> *const c_void {
        std::mem::ManuallyDrop::new(self).0.as_ptr()
    }
}

impl Drop for Stock {
    fn drop(&mut self) {
        // SAFETY: made by a stock `NewBloomFilterPolicy`, deleted once.
        unsafe { leveldb_bloom_dropin_stock_delete(self.0.as_ptr()) };
    }
}

/// The policy for `leveldb` of `format` (`stock_bits` for that LevelDB's own Bloom policy),
/// as the module's comment decides; `Err` with why none could be found. A `std::bad_alloc`
/// from C++ passes through. Out of line, as are its rarer paths: a policy may be made on a
/// signal handler's small stack.
#[inline(never)]
pub(crate) fn for_leveldb(
    format: AnyPolicy,
    stock_bits: c_int,
    leveldb: Result<LevelDb, String>,
) -> *const c_void {
    let leveldb = match leveldb {
        Ok(leveldb) => leveldb,
        Err(why) => return refused(&why),
    };
    let compact = matches!(format, AnyPolicy::Compact(_));
    let stock = leveldb
        .new_policy
        .and_then(|new_policy| Stock::made_by(new_policy, stock_bits));
    if let Some(made) = &stock {
        let made = made.0.as_ptr();
        #[cfg(unix)]
        if leveldb.policy_of_another_copy(speaks::name_of(made)) {
            // Another copy of the drop-in's policy, which serves: its story, not this copy's.
            return stock.map_or(std::ptr::null(), Stock::into_raw);
        }
        if let Err(why) = speaks::judge(made, compact) {
            return declined(&leveldb, &why, stock);
        }
    }
    let Some(answers) = Answers::new(format) else {
        return stock.map_or_else(|| refused("memory ran out"), Stock::into_raw);
    };
    let (writer, how, builds_compact) = match (leveldb.c_api, stock) {
        (Some(create), _) => match c_wrapper(create, format) {
            Some(wrapper) => (Writer::CApi(wrapper), "its C API writes", compact),
            None => return refused("memory ran out"),
        },
        (None, Some(stock)) if compact => (Writer::Stock(stock), NO_C_API_COMPACT, false),
        (None, Some(stock)) => (Writer::Stock(stock), "its own Bloom policy writes", false),
        (None, None) => match leveldb.linked_strings {
            #[cfg(unix)]
            Some(layout) => (Writer::Own(layout), how_own(layout), compact),
            _ => return unwritable(&leveldb),
        },
    };
    stats::count_served();
    stats::count_format(builds_compact);
    stats::say_served(&leveldb.describe(), how);
    object(answers, writer)
}

/// The LevelDB's own policy, `stock`, handed back: it does not speak the format.
#[cold]
#[inline(never)]
fn declined(leveldb: &LevelDb, why: &str, stock: Option<Stock>) -> *const c_void {
    stats::declined(&format!("{} ({why})", leveldb.describe()));
    stock.map_or(std::ptr::null(), Stock::into_raw)
}

/// No policy for a LevelDB with no code to write its strings with.
#[cold]
#[inline(never)]
fn unwritable(leveldb: &LevelDb) -> *const c_void {
    refused(&format!(
        "{} has no C API and no Bloom policy of its own",
        leveldb.describe()
    ))
}

/// How the statistics say the drop-in writes.
#[cfg(unix)]
fn how_own(layout: StringLayout) -> &'static str {
    match layout {
        StringLayout::Cxx11 => "the drop-in writes its C++11 strings",
        StringLayout::Old => "the drop-in writes its old strings",
    }
}

/// How a LevelDB with no C API, asked for compact filters, is served.
const NO_C_API_COMPACT: &str =
    "no C API to write compact filters with: its own Bloom policy writes Bloom filters";

/// No policy: NULL, which LevelDB takes as "no filter policy" (no filters written, every
/// table read), said and counted.
#[cold]
#[inline(never)]
fn refused(why: &str) -> *const c_void {
    stats::refused(&format!("{why}; no filter policy"));
    std::ptr::null()
}

/// LevelDB's own C wrapper (`create`, its `leveldb_filterpolicy_create`) over the C API's
/// callbacks and a C API policy of `format`, which the wrapper owns; `None` if memory runs
/// out. A `std::bad_alloc` from LevelDB's `new` passes through.
fn c_wrapper(create: CreateFn, format: AnyPolicy) -> Option<Stock> {
    let state = Answers::new(format)?.into_raw().cast::<c_void>();
    /// Destroys the state if LevelDB's `new` throws.
    struct FreeOnUnwind(*mut c_void);
    impl Drop for FreeOnUnwind {
        fn drop(&mut self) {
            // SAFETY: the state made above, not owned by a wrapper.
            unsafe { capi::leveldb_bloom_cb_destructor(self.0) };
        }
    }
    let guard = FreeOnUnwind(state);
    // SAFETY: LevelDB's `leveldb_filterpolicy_create`, given a live state and callbacks of
    // the types c.h states; the wrapper owns the state from here (its destructor calls the
    // C API's destructor callback).
    let wrapper = unsafe {
        create(
            state,
            capi::leveldb_bloom_cb_destructor,
            capi::leveldb_bloom_cb_create_filter,
            capi::leveldb_bloom_cb_key_may_match,
            capi::leveldb_bloom_cb_name,
        )
    };
    std::mem::forget(guard);
    NonNull::new(wrapper.cast_mut()).map(Stock)
}

/// A new object of the drop-in's (policy.cc) that answers with `answers` and writes with
/// `writer`. A `std::bad_alloc` from C++ passes through.
fn object(answers: Answers, writer: Writer) -> *const c_void {
    stats::policy_made();
    let raw = Box::into_raw(Box::new(Policy { answers, writer }));
    /// Frees the policy if the object's `new` throws.
    struct FreeOnUnwind(*mut Policy);
    impl Drop for FreeOnUnwind {
        fn drop(&mut self) {
            // SAFETY: the policy made above, not yet owned by an object.
            unsafe { free_policy(self.0) };
        }
    }
    let guard = FreeOnUnwind(raw);
    // SAFETY: `raw` is live; the object takes it, or throws and `guard` frees it.
    let object = unsafe {
        let answers = (*raw).answers.0.as_ref();
        leveldb_bloom_dropin_object_new(
            raw.cast(),
            (*raw).answers.as_ptr().cast(),
            answers.checked_query(),
            create_filter,
            free_policy,
        )
    };
    std::mem::forget(guard);
    object
}

/// The object's destructor's part: releases the policy.
///
/// # Safety
/// `policy` came from `object` and is not used again.
unsafe extern "C" fn free_policy(policy: *mut Policy) {
    // SAFETY: the caller passes ownership.
    drop(unsafe { Box::from_raw(policy) });
    stats::policy_gone();
}

/// The object's `CreateFilter`: appends the filter of `keys` to `dst`, LevelDB's string,
/// written by the LevelDB's own C API wrapper or Bloom policy, or by the drop-in. A
/// `std::bad_alloc` from growing the string passes through, as from LevelDB's own policy.
///
/// # Safety
/// `policy` is live; `keys` points to `n` slices of readable bytes (or `n` is 0); `dst` is
/// the calling LevelDB's `std::string`.
unsafe extern "C-unwind" fn create_filter(
    policy: *const Policy,
    keys: *const Slice,
    n: c_int,
    dst: *mut c_void,
) {
    // SAFETY: the caller guarantees a live policy.
    let policy = unsafe { &*policy };
    let stock = match &policy.writer {
        Writer::CApi(wrapper) => {
            // SAFETY: the policy's wrapper, live while the policy is; the rest as this
            // function's caller guarantees. The wrapper's callback counts what it builds.
            return unsafe {
                leveldb_bloom_dropin_stock_create_filter(wrapper.0.as_ptr(), keys, n, dst)
            };
        }
        Writer::Stock(stock) => stock,
        #[cfg(unix)]
        Writer::Own(layout) => {
            // SAFETY: as this function's caller guarantees, with `dst` of `layout`.
            return unsafe { append_filter(&policy.answers, *layout, keys, n, dst) };
        }
    };
    // SAFETY: the policy's stock object, live while the policy is; the rest as this
    // function's caller guarantees.
    unsafe { leveldb_bloom_dropin_stock_create_filter(stock.0.as_ptr(), keys, n, dst) };
    // SAFETY: the policy's own C API policy, live while it is.
    let answers = unsafe { policy.answers.0.as_ref() };
    answers.record_filter_written_elsewhere(usize::try_from(n).unwrap_or(0));
}

/// Appends the filter straight into the string (no buffer of our own, no copy), grown by its
/// own layout's code; the filter every reader answers "may match" if it cannot be built.
///
/// # Safety
/// As `create_filter`'s, with `dst` a string of `layout`.
#[cfg(unix)]
unsafe fn append_filter(
    answers: &Answers,
    layout: StringLayout,
    keys: *const Slice,
    n: c_int,
    dst: *mut c_void,
) {
    type Size = unsafe extern "C-unwind" fn(*const c_void) -> usize;
    type Resize = unsafe extern "C-unwind" fn(*mut c_void, usize) -> *mut u8;
    let (size, resize): (Size, Resize) = match layout {
        StringLayout::Cxx11 => (
            leveldb_bloom_dropin_string_size_cxx11,
            leveldb_bloom_dropin_string_resize_cxx11,
        ),
        StringLayout::Old => (
            leveldb_bloom_dropin_string_size_old,
            leveldb_bloom_dropin_string_resize_old,
        ),
    };
    let num_keys = usize::try_from(n).unwrap_or(0);
    // SAFETY: `dst` is a live string of this layout.
    let start = unsafe { size(dst) };
    // SAFETY: a live policy.
    let len = unsafe { capi::leveldb_bloom_filter_len(answers.as_ptr(), num_keys) };
    if len != 0
        && let Some(end) = start.checked_add(len)
    {
        // SAFETY: grows the string to `end` bytes (a C++ exception passes through) and
        // returns its characters, of which `start..end` are then written.
        let filter = unsafe { resize(dst, end).add(start) };
        let mut written = 0;
        // SAFETY: a live policy, `num_keys` slices (LevelDB's, of the C API's layout), and
        // `len` writable bytes.
        let status = unsafe {
            capi::leveldb_bloom_create_filter_slices(
                answers.as_ptr(),
                if num_keys == 0 {
                    std::ptr::null()
                } else {
                    keys
                },
                num_keys,
                filter,
                len,
                &mut written,
            )
        };
        if status == capi::leveldb_bloom_status::LEVELDB_BLOOM_OK as c_int && written == len {
            return;
        }
    }
    // What every LevelDB reader answers "may match": 0 probes.
    // SAFETY: sets the string to `start + 2` bytes and writes the last two.
    unsafe {
        let at = resize(dst, start + 2).add(start);
        at.write(0);
        at.add(1).write(0);
    }
}
