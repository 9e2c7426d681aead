//! The Rust side of the drop-in's policy object (policy.cc holds the C++ side: the vtable):
//! the format's policy, its counters, the stock policy that writes the filters of a LevelDB
//! the drop-in cannot prove, and the functions the object's `CreateFilter` and `KeyMayMatch`
//! call.
//!
//! `KeyMayMatch` reaches the query in as few steps as LevelDB's own: the object calls the
//! query function chosen when the policy was made (its format, whether it counts, the
//! processor's instructions) with LevelDB's pointers and lengths, and the Bloom query runs
//! inline in it, with no argument checks beyond NULL and no panic guard (its code indexes
//! only within the filter). Compact and counted queries keep the guard.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::slice;

use leveldb_bloom::{AnyPolicy, Counted, FilterPolicy};

use crate::owner::{self, NewPolicyFn, StringAbi, Writer};
use crate::stats;

/// `leveldb::Slice` (include/leveldb/slice.h): its two members, in order (policy.cc checks
/// that it is `leveldb_bloom_slice`).
pub(crate) type Slice = leveldb_bloom_capi::leveldb_bloom_slice;

unsafe extern "C-unwind" {
    // policy.cc: a new policy object (a `const leveldb::FilterPolicy*`) that owns `policy`,
    // is named `name`, and calls `query`, `create_filter` and `free` with `policy`; throws
    // std::bad_alloc if memory runs out (the caller then still owns `policy`).
    fn leveldb_bloom_dropin_object_new(
        policy: *mut c_void,
        name: *const c_char,
        query: QueryFn,
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

/// The policy's name, LevelDB's (`leveldb_bloom::NAME`), as a C string.
const NAME: &CStr = c"leveldb.BuiltinBloomFilter2";
const _: () = {
    let (ours, library) = (NAME.to_bytes(), leveldb_bloom::NAME.as_bytes());
    assert!(ours.len() == library.len());
    let mut i = 0;
    while i < ours.len() {
        assert!(ours[i] == library[i], "NAME must be leveldb_bloom::NAME");
        i += 1;
    }
};

/// The object's `KeyMayMatch` (policy.cc): the policy, the key's bytes and length, the
/// filter's.
type QueryFn = unsafe extern "C" fn(*const Policy, *const u8, usize, *const u8, usize) -> bool;
/// The object's `CreateFilter`: the policy, the calling code's address, LevelDB's keys and
/// their count, LevelDB's string.
type CreateFilterFn =
    unsafe extern "C-unwind" fn(*const Policy, *const c_void, *const Slice, c_int, *mut c_void);
/// The object's destructor's part.
type FreeFn = unsafe extern "C" fn(*mut Policy);

/// What one policy object holds on the Rust side.
pub(crate) struct Policy {
    /// The policy of the format chosen (`format.rs`), which builds and answers.
    format: AnyPolicy,
    /// The same policy counting its work (the library's `Counted`), when a statistics file
    /// is asked for.
    counted: Option<Counted<AnyPolicy>>,
    /// Who writes the filters of a LevelDB the drop-in cannot prove and that has no policy of
    /// its own.
    fallback: Fallback,
    /// The bits per key stock policies are made with.
    stock_bits: c_int,
}

/// Who writes a filter when neither the drop-in nor the calling LevelDB's own policy may.
enum Fallback {
    /// A stock LevelDB policy (a `leveldb::FilterPolicy*` of the definition the drop-in
    /// displaced, or of the asking code's own), owned.
    Stock(*const c_void),
    /// No stock policy exists: the layout proven for the code that asked for the policy, the
    /// one LevelDB that can be calling.
    Proven(StringAbi),
}

impl Drop for Policy {
    fn drop(&mut self) {
        if let Fallback::Stock(stock) = self.fallback {
            // SAFETY: made by a stock `NewBloomFilterPolicy`, deleted once.
            unsafe { leveldb_bloom_dropin_stock_delete(stock) };
        }
    }
}

/// A new policy object for `format` (`stock_bits` for stock policies) whose fallback is the
/// stock policy `stock_new` makes or, without one, the layout proven for the asking code;
/// NULL where neither is had (no filter policy, said and counted). A `std::bad_alloc` from
/// C++ passes through.
pub(crate) fn new_object(
    format: AnyPolicy,
    stock_bits: c_int,
    stock_new: Option<NewPolicyFn>,
    proven: Option<StringAbi>,
) -> *const c_void {
    // SAFETY: a definition of `leveldb::NewBloomFilterPolicy(int)`; its `std::bad_alloc`
    // passes through.
    let stock = stock_new.map_or(std::ptr::null(), |new| unsafe { new(stock_bits) });
    let fallback = match (stock.is_null(), proven) {
        (false, _) => Fallback::Stock(stock),
        (true, Some(abi)) => Fallback::Proven(abi),
        (true, None) => {
            stats::count_refused(
                "the policy of the NewBloomFilterPolicy the drop-in displaced is NULL and the \
                 asking code is not proven; no filter policy",
            );
            return std::ptr::null();
        }
    };
    let counted = stats::file_wanted().then(|| Counted::new(format));
    let query = query_for(&format, counted.is_some());
    let policy = Box::new(Policy {
        format,
        counted,
        fallback,
        stock_bits,
    });
    stats::count_policy();
    let raw = Box::into_raw(policy);
    /// Frees the policy if the object's `new` throws.
    struct FreeOnUnwind(*mut Policy);
    impl Drop for FreeOnUnwind {
        fn drop(&mut self) {
            // SAFETY: the policy made above, not yet owned by an object.
            drop(unsafe { Box::from_raw(self.0) });
        }
    }
    let guard = FreeOnUnwind(raw);
    // SAFETY: `raw` is live; the object takes it, or throws and `guard` frees it.
    let object = unsafe {
        leveldb_bloom_dropin_object_new(
            raw.cast(),
            NAME.as_ptr(),
            query,
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
/// `policy` came from `new_object` and is not used again.
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
/// the calling code's `std::string`.
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
        Writer::Stock(Some(new)) => {
            // SAFETY: the calling object's own `NewBloomFilterPolicy`, whose policy writes and
            // is deleted; `keys`, `n` and `dst` as this function's caller guarantees.
            unsafe {
                leveldb_bloom_dropin_stock_create_filter_with(new, policy.stock_bits, keys, n, dst)
            };
            stats::count_filter_by_stock();
            return;
        }
        Writer::Stock(None) => match policy.fallback {
            Fallback::Stock(stock) => {
                // SAFETY: the policy's stock object, live while the policy is.
                unsafe { leveldb_bloom_dropin_stock_create_filter(stock, keys, n, dst) };
                stats::count_filter_by_stock();
                return;
            }
            Fallback::Proven(abi) => abi,
        },
    };
    // SAFETY: as this function's caller guarantees, with `abi` proven for `dst`.
    unsafe { append_filter(policy, abi, keys, n, dst) }
}

/// LevelDB's keys as byte slices (a NULL key pointer with length 0 is the empty key).
///
/// # Safety
/// `keys` points to `n` slices whose bytes stay readable for `'a` (or `n` is 0).
unsafe fn key_slices<'a>(keys: *const Slice, n: usize) -> impl ExactSizeIterator<Item = &'a [u8]> {
    let keys: &[Slice] = if n == 0 || keys.is_null() {
        &[]
    } else {
        // SAFETY: the caller guarantees `n` slices.
        unsafe { slice::from_raw_parts(keys, n) }
    };
    keys.iter().map(|key| {
        if key.data.is_null() {
            &[][..]
        } else {
            // SAFETY: the caller guarantees each key's bytes.
            unsafe { slice::from_raw_parts(key.data.cast::<u8>(), key.len) }
        }
    })
}

/// Appends the filter straight into the string (no buffer of our own, no copy), grown by its
/// own layout's code; the filter every reader answers "may match" if it cannot be built.
///
/// # Safety
/// As `create_filter`'s, with `dst` a string of layout `abi`.
unsafe fn append_filter(
    policy: &Policy,
    abi: StringAbi,
    keys: *const Slice,
    n: c_int,
    dst: *mut c_void,
) {
    type Size = unsafe extern "C-unwind" fn(*const c_void) -> usize;
    type Resize = unsafe extern "C-unwind" fn(*mut c_void, usize) -> *mut u8;
    let (size, resize): (Size, Resize) = match abi {
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
    if let Ok(len) = policy.format.filter_len(num_keys)
        && len != 0
        && let Some(end) = start.checked_add(len)
    {
        // SAFETY: grows the string to `end` bytes (a C++ exception passes through) and
        // returns its characters, of which `start..end` are then written.
        let filter = unsafe { slice::from_raw_parts_mut(resize(dst, end).add(start), len) };
        // A panic here (a bug) writes the filter every reader answers "may match", below.
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the keys as the caller guarantees.
            let keys = unsafe { key_slices(keys, num_keys) };
            match &policy.counted {
                Some(counted) => counted.create_filter_into(keys, filter),
                None => policy.format.create_filter_into(keys, filter),
            }
        }));
        if built.ok().and_then(Result::ok) == Some(len) {
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

/// The query function for a policy of `format`, counting or not, compiled for the
/// instructions the library runs (`leveldb_bloom::instructions`, which
/// `LEVELDB_BLOOM_SIMD` pins).
fn query_for(format: &AnyPolicy, counts: bool) -> QueryFn {
    #[cfg(target_arch = "x86_64")]
    let bmi2 = leveldb_bloom::instructions().has_bmi2();
    match (format, counts) {
        #[cfg(target_arch = "x86_64")]
        (AnyPolicy::Bloom(_), false) if bmi2 => bloom_bmi2,
        (AnyPolicy::Bloom(_), false) => bloom,
        _ => guarded,
    }
}

/// Defines a [`QueryFn`] answering `$answer` for `$policy`, `$key` and `$filter`; NULL
/// pointers and impossible lengths go to [`unusual_query`].
macro_rules! query {
    ($(#[$attr:meta])* $name:ident, |$policy:ident, $key:ident, $filter:ident| $answer:expr) => {
        $(#[$attr])*
        unsafe extern "C" fn $name(
            policy: *const Policy,
            key: *const u8,
            key_len: usize,
            filter: *const u8,
            filter_len: usize,
        ) -> bool {
            if key.is_null() || filter.is_null() || (key_len | filter_len) > isize::MAX as usize {
                // SAFETY: as this function's caller guarantees.
                return unsafe { unusual_query(policy, key, key_len, filter, filter_len) };
            }
            // SAFETY: a live policy (the object's), and LevelDB's slices: non-NULL, their
            // bytes readable.
            let ($policy, $key, $filter) = unsafe {
                (
                    &*policy,
                    slice::from_raw_parts(key, key_len),
                    slice::from_raw_parts(filter, filter_len),
                )
            };
            $answer
        }
    };
}

query!(
    /// An uncounted Bloom policy's query: LevelDB's, inline.
    bloom,
    |_policy, key, filter| leveldb_bloom::bloom::key_may_match(key, filter)
);

query!(
    /// An uncounted Bloom policy's query on a processor with BMI2 (three-operand shifts and
    /// multiplications leave the probes fewer register moves).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2")]
    bloom_bmi2,
    |_policy, key, filter| leveldb_bloom::bloom::key_may_match(key, filter)
);

query!(
    /// Any other policy's query (compact, or counting), guarded against panics: "may match"
    /// if one happens.
    guarded,
    |policy, key, filter| answer(policy, key, filter)
);

/// `policy`'s answer, counted if it counts; "may match" if the query panics.
fn answer(policy: &Policy, key: &[u8], filter: &[u8]) -> bool {
    std::panic::catch_unwind(|| match &policy.counted {
        Some(counted) => counted.key_may_match(key, filter),
        None => policy.format.key_may_match(key, filter),
    })
    .unwrap_or(true)
}

/// A query with a NULL pointer or a length no object can have: a NULL key of length 0 is
/// the empty key; anything else that cannot be answered "may match" (a wrong "no" would hide
/// stored data).
///
/// # Safety
/// `policy` is live; non-NULL pointers point to their lengths' readable bytes.
#[cold]
#[inline(never)]
unsafe fn unusual_query(
    policy: *const Policy,
    key: *const u8,
    key_len: usize,
    filter: *const u8,
    filter_len: usize,
) -> bool {
    if filter.is_null() || !key.is_null() || key_len != 0 || filter_len > isize::MAX as usize {
        return true;
    }
    // SAFETY: a live policy; the filter's bytes as the caller guarantees.
    let (policy, filter) = unsafe { (&*policy, slice::from_raw_parts(filter, filter_len)) };
    answer(policy, &[], filter)
}
