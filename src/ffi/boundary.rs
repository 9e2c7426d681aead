//! The helpers every entry point uses to check C pointers and stop panics, so that each
//! exported function reads as a few lines.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::status::leveldb_bloom_status::{self, *};

/// An entry point's outcome before it becomes a C status code.
pub(crate) type FfiResult<T> = Result<T, leveldb_bloom_status>;

/// Runs `body`; a panic inside becomes `on_panic` instead of unwinding into C. Every entry
/// point runs its work through this (or the helpers below).
pub(crate) fn guard<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(|| {
        #[cfg(feature = "panic-injection")]
        panic_injection::panic_if_armed();
        body()
    }))
    .unwrap_or(on_panic)
}

/// Test support (cargo feature `panic-injection`, never in a release): makes the next
/// guarded call on this thread panic inside the guard, to show what each entry point
/// answers when a bug inside the library panics.
#[cfg(feature = "panic-injection")]
pub mod panic_injection {
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<bool> = const { Cell::new(false) };
    }

    /// The next guarded call on this thread panics.
    pub fn arm() {
        ARMED.set(true);
    }

    pub(crate) fn panic_if_armed() {
        if ARMED.replace(false) {
            panic!("panic injected for a test");
        }
    }
}

/// Destroys the object a `_create` function made with `Box::into_raw`; NULL is a no-op. A
/// panic in its destructor leaks it rather than unwind into C.
///
/// # Safety
/// `ptr` is NULL, or came from `Box::into_raw` and is not used again by anyone.
pub(crate) unsafe fn destroy<T>(ptr: *mut T) {
    guard((), || {
        if !ptr.is_null() {
            // SAFETY: the caller passes ownership of an object made by `Box::into_raw`.
            drop(unsafe { Box::from_raw(ptr) });
        }
    })
}

/// Runs `body` as an entry point that returns a status code.
pub(crate) fn guard_status(body: impl FnOnce() -> FfiResult<()>) -> libc::c_int {
    guard(LEVELDB_BLOOM_ERR_PANIC as libc::c_int, || match body() {
        Ok(()) => LEVELDB_BLOOM_OK as libc::c_int,
        Err(status) => status as libc::c_int,
    })
}

/// Runs `body` as a query: an error or a panic answers "may match", because a wrong
/// "no match" hides stored data.
pub(crate) fn guard_query(body: impl FnOnce() -> FfiResult<bool>) -> bool {
    guard(true, || body().unwrap_or(true))
}

/// The object behind `ptr`, or `NULL_ARGUMENT`.
///
/// # Safety
/// `ptr` is NULL or points to a live, properly initialised `T` that nothing mutates for `'a`.
pub(crate) unsafe fn try_ref<'a, T>(ptr: *const T) -> FfiResult<&'a T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` points to a live `T`.
    unsafe { ptr.as_ref() }.ok_or(LEVELDB_BLOOM_ERR_NULL_ARGUMENT)
}

/// The object behind `ptr` for mutation, or `NULL_ARGUMENT`.
///
/// # Safety
/// `ptr` is NULL or points to a live `T` that nothing else touches for `'a`.
pub(crate) unsafe fn try_mut<'a, T>(ptr: *mut T) -> FfiResult<&'a mut T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` points to a live, unaliased `T`.
    unsafe { ptr.as_mut() }.ok_or(LEVELDB_BLOOM_ERR_NULL_ARGUMENT)
}

/// `len` elements at `ptr` as a slice. NULL with `len == 0` is the empty slice; NULL with a
/// length is `NULL_ARGUMENT`; a length no allocation can have, or a misaligned pointer, is
/// `INVALID_ARGUMENT`.
///
/// # Safety
/// A non-NULL `ptr` points to `len` initialised elements that nothing mutates for `'a`.
pub(crate) unsafe fn try_slice<'a, T>(ptr: *const T, len: usize) -> FfiResult<&'a [T]> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(LEVELDB_BLOOM_ERR_NULL_ARGUMENT)
        };
    }
    check_extent::<T>(ptr, len)?;
    // SAFETY: non-NULL, aligned, the extent fits in isize, and the caller guarantees `len`
    // initialised elements that stay unmodified for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` bytes at `ptr` as a writable slice, zeroed first (the caller's memory may be
/// uninitialised). NULL is allowed only with `len == 0`.
///
/// # Safety
/// A non-NULL `ptr` points to `len` writable bytes that nothing else touches for `'a`.
pub(crate) unsafe fn try_zeroed_bytes_mut<'a>(ptr: *mut u8, len: usize) -> FfiResult<&'a mut [u8]> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&mut [])
        } else {
            Err(LEVELDB_BLOOM_ERR_NULL_ARGUMENT)
        };
    }
    check_extent::<u8>(ptr, len)?;
    // SAFETY: the caller guarantees `len` writable bytes at `ptr`; zeroing initialises them.
    unsafe { std::ptr::write_bytes(ptr, 0, len) };
    // SAFETY: non-NULL, initialised just above, exclusively ours for `'a` by the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// The caller's `results` buffer for `len` answers, every byte set to 1 ("may match") so
/// that whatever happens next, no answer reads "no match" by accident. NULL is allowed only
/// with `len == 0`.
///
/// # Safety
/// A non-NULL `ptr` points to `len` writable bytes that nothing else touches for `'a`.
pub(crate) unsafe fn try_results<'a>(ptr: *mut u8, len: usize) -> FfiResult<&'a mut [bool]> {
    // SAFETY: forwarded from this function's contract.
    let bytes = unsafe { try_zeroed_bytes_mut(ptr, len) }?;
    bytes.fill(1);
    // SAFETY: every byte is 1, a valid `bool`, and `bool` has the size and alignment of `u8`;
    // the slice takes over the exclusive borrow of `bytes`.
    Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<bool>(), len) })
}

/// The caller's results buffer of a batch query. Whatever happens, no answer reads "no
/// match" by accident: every result is 1 ("may match") before the work starts, and again
/// after any error or panic.
pub(crate) struct Batch {
    results: *mut u8,
    len: usize,
}

impl Batch {
    /// # Safety
    /// A non-NULL `results` points to `len` writable bytes that nothing else touches until
    /// [`answer`](Self::answer) returns.
    pub(crate) unsafe fn new(results: *mut u8, len: usize) -> Self {
        Batch { results, len }
    }

    /// Runs `body` on the results as an entry point returning a status code; on an error
    /// (a NULL `results` with a length included) or a panic, every result is 1.
    pub(crate) fn answer(self, body: impl FnOnce(&mut [bool]) -> FfiResult<()>) -> libc::c_int {
        let status = guard_status(|| {
            // SAFETY: `new`'s contract.
            let results = unsafe { try_results(self.results, self.len) }?;
            body(results)
        });
        if status != LEVELDB_BLOOM_OK as libc::c_int {
            // SAFETY: `new`'s contract; cannot panic.
            let _ = unsafe { try_results(self.results, self.len) };
        }
        status
    }
}

/// A filter for a query: unlike a key, a NULL filter is never "empty", it is missing.
///
/// # Safety
/// A non-NULL `filter` points to `len` readable bytes.
pub(crate) unsafe fn try_filter<'a>(filter: *const u8, len: usize) -> FfiResult<&'a [u8]> {
    if filter.is_null() {
        return Err(LEVELDB_BLOOM_ERR_NULL_ARGUMENT);
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { try_slice(filter, len) }
}

/// Refuses what `slice::from_raw_parts` may not be given: a misaligned pointer, or more
/// than `isize::MAX` bytes.
fn check_extent<T>(ptr: *const T, len: usize) -> FfiResult<()> {
    let fits = len
        .checked_mul(size_of::<T>())
        .is_some_and(|bytes| bytes <= isize::MAX as usize);
    if fits && ptr.is_aligned() {
        Ok(())
    } else {
        Err(LEVELDB_BLOOM_ERR_INVALID_ARGUMENT)
    }
}

/// A byte string as C passes it in arrays: layout-compatible with `leveldb::Slice`
/// (a pointer, then a length), so a C++ caller can hand LevelDB's key array over as it is.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct leveldb_bloom_slice {
    /// The first byte; may be NULL when `len` is 0.
    pub data: *const libc::c_char,
    /// The number of bytes.
    pub len: usize,
}

/// The keys of a C key array, in either layout the API takes, checked once so that
/// iterating cannot fail.
#[derive(Clone, Copy)]
pub(crate) enum KeyArray<'a> {
    /// `num_keys` pointers and as many lengths.
    Split {
        keys: &'a [*const libc::c_char],
        lens: &'a [usize],
    },
    /// `num_keys` (pointer, length) pairs.
    Slices(&'a [leveldb_bloom_slice]),
}

impl<'a> KeyArray<'a> {
    /// # Safety
    /// Non-NULL `keys` and `key_lens` point to `num_keys` elements each, and each non-NULL
    /// key points to `key_lens[i]` bytes; none of it changes for `'a`.
    pub(crate) unsafe fn split(
        keys: *const *const libc::c_char,
        key_lens: *const usize,
        num_keys: usize,
    ) -> FfiResult<Self> {
        // SAFETY: forwarded from this function's contract.
        let (keys, lens) = unsafe { (try_slice(keys, num_keys)?, try_slice(key_lens, num_keys)?) };
        let array = KeyArray::Split { keys, lens };
        array.check()?;
        Ok(array)
    }

    /// # Safety
    /// A non-NULL `slices` points to `num_keys` slices, each non-NULL `data` to `len`
    /// bytes; none of it changes for `'a`.
    pub(crate) unsafe fn slices(
        slices: *const leveldb_bloom_slice,
        num_keys: usize,
    ) -> FfiResult<Self> {
        // SAFETY: forwarded from this function's contract.
        let array = KeyArray::Slices(unsafe { try_slice(slices, num_keys)? });
        array.check()?;
        Ok(array)
    }

    pub(crate) fn len(self) -> usize {
        match self {
            KeyArray::Split { keys, .. } => keys.len(),
            KeyArray::Slices(slices) => slices.len(),
        }
    }

    fn raw(self, i: usize) -> (*const libc::c_char, usize) {
        match self {
            KeyArray::Split { keys, lens } => (keys[i], lens[i]),
            KeyArray::Slices(slices) => (slices[i].data, slices[i].len),
        }
    }

    /// Refuses a NULL key with a length, a misaligned array, or an impossible length.
    fn check(self) -> FfiResult<()> {
        for i in 0..self.len() {
            let (key, len) = self.raw(i);
            if key.is_null() {
                if len != 0 {
                    return Err(LEVELDB_BLOOM_ERR_NULL_ARGUMENT);
                }
            } else {
                check_extent(key, len)?;
            }
        }
        Ok(())
    }

    pub(crate) fn iter(self) -> impl ExactSizeIterator<Item = &'a [u8]> {
        (0..self.len()).map(move |i| {
            let (key, len) = self.raw(i);
            // SAFETY: `check` refused NULL with a length, misalignment and impossible
            // extents; the constructor's caller guaranteed the bytes.
            unsafe { try_slice(key.cast::<u8>(), len) }.unwrap_or_default()
        })
    }
}
