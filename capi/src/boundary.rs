//! The helpers every entry point uses to check C pointers and stop panics, so that each
//! exported function reads as a few lines.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::status::leveldb_bloom_status::{self, *};

/// An entry point's outcome before it becomes a C status code.
pub(crate) type FfiResult<T> = Result<T, leveldb_bloom_status>;

/// Runs `body`; a panic inside becomes `on_panic` instead of unwinding into C. Every entry
/// point runs its work through this (or the helpers below).
#[inline(always)]
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

/// A new object made by `make` from the object behind `from`, handed to the caller; NULL
/// if `from` is NULL or `make` panics.
///
/// # Safety
/// `from` is NULL or points to a live `S`.
pub(crate) unsafe fn create_from<S, T>(from: *const S, make: impl FnOnce(&S) -> Box<T>) -> *mut T {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller guarantees NULL or a live `S`.
        match unsafe { try_ref(from) } {
            Ok(from) => Box::into_raw(make(from)),
            Err(_) => std::ptr::null_mut(),
        }
    })
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
/// iterating cannot fail. Each layout's keys are a type only [`KeyArray::split`] and
/// [`KeyArray::slices`] can make (their fields are private to this file), so holding one is
/// proof of the check; read with [`with_keys`].
#[derive(Clone, Copy)]
pub(crate) enum KeyArray<'a> {
    /// `num_keys` pointers and as many lengths.
    Split(SplitKeys<'a>),
    /// `num_keys` (pointer, length) pairs.
    Slices(SliceKeys<'a>),
}

/// Checked keys of the split layout.
#[derive(Clone, Copy)]
pub(crate) struct SplitKeys<'a> {
    keys: &'a [*const libc::c_char],
    lens: &'a [usize],
}

/// Checked keys of the slice layout.
#[derive(Clone, Copy)]
pub(crate) struct SliceKeys<'a>(&'a [leveldb_bloom_slice]);

impl<'a> SplitKeys<'a> {
    pub(crate) fn iter(self) -> impl ExactSizeIterator<Item = &'a [u8]> {
        self.keys
            .iter()
            .zip(self.lens)
            // SAFETY: made only by `KeyArray::split`, whose caller guarantees the bytes and
            // whose check refused a NULL key with a length and lengths past isize::MAX.
            .map(|(&key, &len)| unsafe { key_bytes(key, len) })
    }
}

impl<'a> SliceKeys<'a> {
    pub(crate) fn iter(self) -> impl ExactSizeIterator<Item = &'a [u8]> {
        // SAFETY: as for `SplitKeys::iter`, made only by `KeyArray::slices`.
        self.0.iter().map(|s| unsafe { key_bytes(s.data, s.len) })
    }
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
        let array = KeyArray::Split(SplitKeys { keys, lens });
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
        let array = KeyArray::Slices(SliceKeys(unsafe { try_slice(slices, num_keys)? }));
        array.check()?;
        Ok(array)
    }

    pub(crate) fn len(self) -> usize {
        match self {
            KeyArray::Split(split) => split.keys.len(),
            KeyArray::Slices(slices) => slices.0.len(),
        }
    }

    /// Refuses a NULL key with a length (`NULL_ARGUMENT`) before a length no object can have
    /// (`INVALID_ARGUMENT`). Every key is looked at without a branch, so that the check
    /// costs a filter's creation next to nothing.
    fn check(self) -> FfiResult<()> {
        // Integers, not booleans, so that the loops vectorise; a length above isize::MAX
        // sets the top bit of the lengths' OR.
        let (mut null_with_length, mut lengths) = (0usize, 0usize);
        let mut look = |key: *const libc::c_char, len: usize| {
            null_with_length |= usize::from(key.is_null()) & usize::from(len != 0);
            lengths |= len;
        };
        match self {
            KeyArray::Split(SplitKeys { keys, lens }) => {
                keys.iter().zip(lens).for_each(|(&k, &l)| look(k, l))
            }
            KeyArray::Slices(SliceKeys(slices)) => slices.iter().for_each(|s| look(s.data, s.len)),
        }
        let (null_with_length, impossible) = (null_with_length != 0, lengths > isize::MAX as usize);
        if null_with_length {
            Err(LEVELDB_BLOOM_ERR_NULL_ARGUMENT)
        } else if impossible {
            Err(LEVELDB_BLOOM_ERR_INVALID_ARGUMENT)
        } else {
            Ok(())
        }
    }
}

/// Runs `$body` with `$keys` an iterator over the keys of the checked [`KeyArray`]
/// `$array`, compiled once per layout, so that taking a key does not ask which layout it is.
macro_rules! with_keys {
    ($array:expr, |$keys:ident| $body:expr) => {
        match $array {
            $crate::boundary::KeyArray::Split(split) => {
                let $keys = split.iter();
                $body
            }
            $crate::boundary::KeyArray::Slices(slices) => {
                let $keys = slices.iter();
                $body
            }
        }
    };
}
pub(crate) use with_keys;

/// A key of a checked [`KeyArray`] as bytes (a NULL key has length 0 there).
///
/// # Safety
/// `key` is NULL with `len` 0, or points to `len <= isize::MAX` bytes that stay unchanged
/// for `'a`.
#[inline(always)]
unsafe fn key_bytes<'a>(key: *const libc::c_char, len: usize) -> &'a [u8] {
    let key = if key.is_null() {
        std::ptr::NonNull::dangling().as_ptr()
    } else {
        key.cast()
    };
    // SAFETY: not NULL, and forwarded from this function's contract.
    unsafe { std::slice::from_raw_parts(key, len) }
}
