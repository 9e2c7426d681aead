//! The table filter block: a builder object and a stateless query.

use std::ffi::{c_char, c_int};

use super::boundary::{Batch, try_filter, try_mut, try_ref};
use super::boundary::{KeyArray, destroy, guard_query, guard_status, with_keys};
use super::boundary::{create_from, try_slice};
use super::handle::{BlockBuilder, leveldb_bloom_policy, with_builder};

/// Builds the filter block of one LevelDB table. Not thread-safe: use one builder from one
/// thread at a time (different builders may run on different threads).
#[allow(non_camel_case_types)]
pub struct leveldb_bloom_filter_block_builder {
    /// Its filters count as its policy's.
    builder: BlockBuilder,
}

/// Creates a filter block builder whose filters `policy` builds. The builder keeps its own
/// copy of the policy's settings and counters, so the policy may be destroyed first; the
/// filters it builds count in the policy's statistics.
///
/// Returns NULL if `policy` is NULL or memory runs out. Release the builder with
/// `leveldb_bloom_filter_block_builder_destroy`.
///
/// # Safety
/// `policy` is NULL or a live policy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_builder_create(
    policy: *const leveldb_bloom_policy,
) -> *mut leveldb_bloom_filter_block_builder {
    // SAFETY: the caller guarantees NULL or a live policy.
    unsafe {
        create_from(policy, |policy| {
            Box::new(leveldb_bloom_filter_block_builder {
                builder: policy.filter_block_builder(),
            })
        })
    }
}

/// Announces a data block starting at `block_offset`, as LevelDB's table builder does
/// (first with 0, then after each data block with the offset past it and its trailer).
///
/// Errors: `NULL_ARGUMENT`; `OFFSET_BACKWARDS` if the offset lies in a 2 KiB window before
/// one already started (nothing changes); `ALREADY_FINISHED`; `TOO_LARGE` if the block would
/// pass 4 GiB; `OUT_OF_MEMORY`; `PANIC`.
///
/// # Safety
/// `builder` is NULL or a live builder not used by another thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_builder_start_block(
    builder: *mut leveldb_bloom_filter_block_builder,
    block_offset: u64,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees NULL or a live, unshared builder.
        let builder = unsafe { try_mut(builder) }?;
        Ok(with_builder!(&mut builder.builder, |b| b.start_block(block_offset))?)
    })
}

/// Adds a key (copied) to the filter of the current data block. A NULL `key` is allowed
/// when `key_len` is 0.
///
/// Errors: `NULL_ARGUMENT` (builder, or a NULL key with a length); `INVALID_ARGUMENT` (a
/// length no object can have); `ALREADY_FINISHED`; `OUT_OF_MEMORY`; `PANIC`.
///
/// # Safety
/// `builder` is NULL or a live builder not used by another thread during the call; a
/// non-NULL `key` points to `key_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_builder_add_key(
    builder: *mut leveldb_bloom_filter_block_builder,
    key: *const c_char,
    key_len: usize,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees the builder and the key's extent.
        let (builder, key) = unsafe { (try_mut(builder)?, try_slice(key.cast::<u8>(), key_len)?) };
        Ok(with_builder!(&mut builder.builder, |b| b.add_key(key))?)
    })
}

/// Finishes the block and stores its bytes in `*block` and `*block_len`. The bytes belong
/// to the builder and stay valid until it is destroyed; calling finish again returns the
/// same bytes. After finish, `start_block` and `add_key` answer `ALREADY_FINISHED`.
///
/// Errors (`*block` and `*block_len` are then left unchanged): `NULL_ARGUMENT`; `TOO_LARGE`
/// if the block would pass 4 GiB; `OUT_OF_MEMORY`; `PANIC`.
///
/// # Safety
/// `builder` is NULL or a live builder not used by another thread during the call; `block`
/// and `block_len` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_builder_finish(
    builder: *mut leveldb_bloom_filter_block_builder,
    block: *mut *const u8,
    block_len: *mut usize,
) -> c_int {
    guard_status(|| {
        // SAFETY: the caller guarantees each pointer is NULL or valid as documented.
        let (builder, block, block_len) =
            unsafe { (try_mut(builder)?, try_mut(block)?, try_mut(block_len)?) };
        let finished = with_builder!(&mut builder.builder, |b| b.finish())?;
        *block = finished.as_ptr();
        *block_len = finished.len();
        Ok(())
    })
}

/// Destroys a builder and the block bytes it returned. NULL is a no-op.
///
/// # Safety
/// `builder` is NULL or a live builder not used by another thread, and not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_builder_destroy(
    builder: *mut leveldb_bloom_filter_block_builder,
) {
    // SAFETY: the caller passes ownership of a builder made by `Box::into_raw` (or NULL).
    unsafe { destroy(builder) }
}

/// Whether `key` may be in the data block at `block_offset` of the table whose filter
/// block is `block`: the block read exactly as LevelDB's `FilterBlockReader` reads it,
/// malformed blocks included ("errors are potential matches"), and the filter it names
/// answered as `leveldb_bloom_key_may_match` answers it.
///
/// `true` means "may match". Anything that cannot be answered (NULL policy or block, a NULL
/// key with a length) answers `true`. Stateless: each call parses the block trailer, which
/// costs a few loads.
///
/// # Safety
/// `policy` is NULL or a live policy; non-NULL `block` and `key` point to `block_len` and
/// `key_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_may_match(
    policy: *const leveldb_bloom_policy,
    block: *const u8,
    block_len: usize,
    block_offset: u64,
    key: *const c_char,
    key_len: usize,
) -> bool {
    guard_query(|| {
        // SAFETY: the caller guarantees the policy and the byte extents.
        let (policy, block, key) = unsafe {
            (
                try_ref(policy)?,
                try_filter(block, block_len)?,
                try_slice(key.cast::<u8>(), key_len)?,
            )
        };
        Ok(policy.filter_block_may_match(block, block_offset, key))
    })
}

/// Answers `leveldb_bloom_filter_block_may_match` for `num_keys` queries against one
/// filter block, faster than one call per query: query `i` asks whether key `i`
/// (`key_lens[i]` bytes at `keys[i]`) may be in the data block at `block_offsets[i]`, and
/// `results[i]` is 1 ("may match") or 0 (certainly absent).
///
/// Returns `LEVELDB_BLOOM_OK`, or an error with every result set to 1 when `results` is
/// usable: `NULL_ARGUMENT` (policy, block, results, an array, or a NULL key with a length),
/// `INVALID_ARGUMENT` (misaligned arrays, impossible lengths), `PANIC`.
///
/// # Safety
/// Non-NULL arrays hold `num_keys` elements, each non-NULL key its length in bytes, a
/// non-NULL `block` `block_len` bytes, and `results` `num_keys` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_bloom_filter_block_may_match_batch(
    policy: *const leveldb_bloom_policy,
    block: *const u8,
    block_len: usize,
    block_offsets: *const u64,
    keys: *const *const c_char,
    key_lens: *const usize,
    num_keys: usize,
    results: *mut u8,
) -> c_int {
    // SAFETY: the caller guarantees `results` holds `num_keys` writable bytes.
    unsafe { Batch::new(results, num_keys) }.answer(|results| {
        // SAFETY: the caller's guarantees for the policy, the block, offsets and keys.
        let (policy, block, offsets, keys) = unsafe {
            (
                try_ref(policy)?,
                try_filter(block, block_len)?,
                try_slice(block_offsets, num_keys)?,
                KeyArray::split(keys, key_lens, num_keys)?,
            )
        };
        with_keys!(keys, |keys| policy.filter_block_may_match_batch(
            block,
            offsets.iter().copied().zip(keys),
            results
        ));
        Ok(())
    })
}
