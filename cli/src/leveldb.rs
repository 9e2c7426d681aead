//! The few functions of LevelDB's C API (`leveldb/c.h`, bound by `leveldb-sys`) that
//! `upgrade` uses to have LevelDB itself rewrite a database's tables, wrapped so that the
//! rest of the tool is safe code. Every pointer LevelDB returns is owned by one wrapper and
//! freed in its `Drop`.

use std::ffi::{CStr, CString, c_char, c_int};
use std::path::Path;
use std::ptr;

use leveldb_bloom::{AnyPolicy, Format};
use leveldb_bloom_capi::{
    leveldb_bloom_cb_create_filter, leveldb_bloom_cb_destructor, leveldb_bloom_cb_key_may_match,
    leveldb_bloom_cb_name, leveldb_bloom_policy_create_compact,
};
use leveldb_sys::*;

use crate::failure::{Failure, Kind};
use crate::way_back::Digest;

/// The policy `upgrade` writes with, in `format` at `bits_per_key` as `Format::policy` takes
/// a setting (the drop-in's `LEVELDB_BLOOM_BITS_PER_KEY` takes the same): Bloom filters
/// written by LevelDB's own Bloom policy (`leveldb_filterpolicy_create_bloom`), compact
/// filters through `leveldb_filterpolicy_create`'s callbacks.
pub fn new_policy(format: Format, bits_per_key: f64) -> Result<AnyPolicy, Failure> {
    format.policy(bits_per_key).map_err(|_| {
        Failure::new(
            Kind::Usage,
            format!(
                "--bits-per-key {bits_per_key}: {} filters take {}",
                format.name(),
                format.settings()
            ),
        )
    })
}

/// A LevelDB error, taken from (and freeing) LevelDB's `errptr`.
fn take_error(err: *mut c_char) -> Option<Failure> {
    if err.is_null() {
        return None;
    }
    // SAFETY: LevelDB sets errptr to a NUL-terminated string from malloc, ours to free.
    let message = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated by LevelDB, freed once, here.
    unsafe { leveldb_free(err.cast()) };
    Some(reported(message))
}

/// What LevelDB reported, as a Failure of its kind. LevelDB's C API gives a failed `Status`
/// as its `ToString()` alone, whose prefix names its code: the one place this crate reads
/// that text, so that the rest decides by the kind.
fn reported(message: String) -> Failure {
    // "IO error: lock <dir>/LOCK: Resource temporarily unavailable", or "... already held by
    // process" within one process.
    let lock_held = message.contains("/LOCK:")
        && (message.contains("unavailable") || message.contains("already held"));
    let kind = if message.starts_with("Corruption:") {
        Kind::Corruption
    } else if lock_held {
        Kind::InUse
    } else {
        Kind::LevelDb
    };
    // The system's own words (strerror), which LevelDB's IOError passes on.
    let full = message.contains("No space left") || message.contains("Disk quota");
    Failure::new(kind, message).with_disk_full(full)
}

/// A key and its value.
pub type Record = (Vec<u8>, Vec<u8>);

/// An open database with a filter policy. Closing (drop) releases LevelDB's lock.
pub struct Db {
    db: *mut leveldb_t,
    options: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
}

impl Db {
    /// Opens the database at `path` (creating it if `create`) with `policy` (no filter
    /// policy if `None`) and `snappy` compression or none, with LevelDB's paranoid checks.
    /// Fails with LevelDB's message,
    /// e.g. when another process holds its lock.
    pub fn open(
        path: &Path,
        policy: Option<AnyPolicy>,
        snappy: bool,
        create: bool,
    ) -> Result<Db, Failure> {
        let name = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Failure::new(Kind::LevelDb, "the path holds a NUL byte"))?;
        let policy = match policy {
            None => ptr::null_mut(),
            // SAFETY: no preconditions; returns an owned policy.
            Some(AnyPolicy::Bloom(bloom)) => unsafe {
                leveldb_filterpolicy_create_bloom(bloom.bits_per_key())
            },
            Some(AnyPolicy::Compact(compact)) => {
                let bits = compact.bits_per_key();
                let state = leveldb_bloom_policy_create_compact(bits);
                if state.is_null() {
                    return Err(Failure::new(
                        Kind::LevelDb,
                        format!("invalid bits per key for compact filters: {bits}"),
                    ));
                }
                // SAFETY: the callbacks take the policy created above as their state;
                // LevelDB owns it from here and frees it with the destructor.
                unsafe {
                    leveldb_filterpolicy_create(
                        state.cast(),
                        Some(leveldb_bloom_cb_destructor),
                        Some(leveldb_bloom_cb_create_filter),
                        Some(leveldb_bloom_cb_key_may_match),
                        Some(leveldb_bloom_cb_name),
                    )
                }
            }
        };
        // SAFETY: no preconditions.
        let options = unsafe { leveldb_options_create() };
        // SAFETY: both live (or the policy NULL: none); the policy outlives the database
        // (dropped after it).
        unsafe {
            leveldb_options_set_filter_policy(options, policy);
            leveldb_options_set_create_if_missing(options, u8::from(create));
            leveldb_options_set_compression(options, c_int::from(snappy));
            // Damage stops LevelDB instead of being skipped: without it, recovery drops a
            // write-ahead log's damaged records and the next compaction makes that final.
            leveldb_options_set_paranoid_checks(options, 1);
        }
        let mut err = ptr::null_mut();
        // SAFETY: options live, name NUL-terminated, err a valid out-pointer.
        let db = unsafe { leveldb_open(options, name.as_ptr(), &mut err) };
        let opened = Db {
            db,
            options,
            policy,
        };
        match take_error(err) {
            Some(message) => Err(message),
            None if db.is_null() => {
                Err(Failure::new(Kind::LevelDb, "LevelDB returned no database"))
            }
            None => Ok(opened),
        }
    }

    /// The first and last records (key, value), or `None` for an empty database.
    pub fn first_and_last(&self) -> Result<Option<[Record; 2]>, Failure> {
        // SAFETY: no preconditions.
        let read = unsafe { leveldb_readoptions_create() };
        // SAFETY: db and read options live.
        let it = unsafe { leveldb_create_iterator(self.db, read) };
        let record = |seek: unsafe extern "C" fn(*mut leveldb_iterator_t)| {
            // SAFETY: `it` is live until destroyed below.
            unsafe {
                seek(it);
                if leveldb_iter_valid(it) == 0 {
                    return None;
                }
                let (mut klen, mut vlen) = (0, 0);
                let key = leveldb_iter_key(it, &mut klen);
                let value = leveldb_iter_value(it, &mut vlen);
                Some((
                    std::slice::from_raw_parts(key.cast::<u8>(), klen).to_vec(),
                    std::slice::from_raw_parts(value.cast::<u8>(), vlen).to_vec(),
                ))
            }
        };
        let first = record(leveldb_iter_seek_to_first);
        let last = record(leveldb_iter_seek_to_last);
        let mut err = ptr::null_mut();
        // SAFETY: live iterator, valid out-pointer; then each object destroyed once.
        unsafe {
            leveldb_iter_get_error(it, &mut err);
            leveldb_iter_destroy(it);
            leveldb_readoptions_destroy(read);
        }
        if let Some(message) = take_error(err) {
            return Err(message);
        }
        Ok(first.zip(last).map(|(f, l)| [f, l]))
    }

    /// Reads every record with LevelDB's iterator, checksums verified: their [`Digest`].
    pub fn digest(&self) -> Result<Digest, Failure> {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut records = 0u64;
        let mut err = ptr::null_mut();
        // SAFETY: the read options and iterator are created, used while the database lives,
        // and destroyed once; each key and value slice is LevelDB's, valid until the
        // iterator moves, and hashed before it does.
        unsafe {
            let read = leveldb_readoptions_create();
            leveldb_readoptions_set_verify_checksums(read, 1);
            leveldb_readoptions_set_fill_cache(read, 0);
            let it = leveldb_create_iterator(self.db, read);
            leveldb_iter_seek_to_first(it);
            while leveldb_iter_valid(it) != 0 {
                let (mut klen, mut vlen) = (0, 0);
                let key = leveldb_iter_key(it, &mut klen);
                let value = leveldb_iter_value(it, &mut vlen);
                hasher.update(&(klen as u64).to_le_bytes());
                hasher.update(std::slice::from_raw_parts(key.cast::<u8>(), klen));
                hasher.update(&(vlen as u64).to_le_bytes());
                hasher.update(std::slice::from_raw_parts(value.cast::<u8>(), vlen));
                records += 1;
                leveldb_iter_next(it);
            }
            leveldb_iter_get_error(it, &mut err);
            leveldb_iter_destroy(it);
            leveldb_readoptions_destroy(read);
        }
        match take_error(err) {
            Some(message) => Err(message),
            None => Ok(Digest {
                records,
                hash: hasher.digest128(),
            }),
        }
    }

    /// Writes `key` = `value` (not synced: LevelDB's compaction syncs what it writes).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<(), Failure> {
        let mut err = ptr::null_mut();
        // SAFETY: live handles; the slices outlive the call, which copies them.
        unsafe {
            let write = leveldb_writeoptions_create();
            leveldb_put(
                self.db,
                write,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            );
            leveldb_writeoptions_destroy(write);
        }
        take_error(err).map_or(Ok(()), Err)
    }

    /// The value of `key`, `None` if absent (LevelDB's `Get`, which asks the filters).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Failure> {
        let (mut err, mut len) = (ptr::null_mut(), 0);
        // SAFETY: live handles; the key outlives the call; a returned value is LevelDB's
        // malloc'd copy of `len` bytes, copied and freed here.
        unsafe {
            let read = leveldb_readoptions_create();
            let value = leveldb_get(
                self.db,
                read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            leveldb_readoptions_destroy(read);
            if let Some(message) = take_error(err) {
                return Err(message);
            }
            if value.is_null() {
                return Ok(None);
            }
            let copy = std::slice::from_raw_parts(value.cast::<u8>(), len).to_vec();
            leveldb_free(value.cast());
            Ok(Some(copy))
        }
    }

    /// The error LevelDB's background work met, if any (a compaction that failed on a full
    /// disk): `CompactRange` does not return it, the next write does. The write is an empty
    /// batch, which adds no record (and so no table when the log is next recovered).
    pub fn background_error(&self) -> Result<(), Failure> {
        let mut err = ptr::null_mut();
        // SAFETY: live handles, each created object destroyed once; err a valid out-pointer.
        unsafe {
            let write = leveldb_writeoptions_create();
            let batch = leveldb_writebatch_create();
            leveldb_write(self.db, write, batch, &mut err);
            leveldb_writebatch_destroy(batch);
            leveldb_writeoptions_destroy(write);
        }
        take_error(err).map_or(Ok(()), Err)
    }

    /// Deletes `key` (not synced).
    pub fn delete(&self, key: &[u8]) -> Result<(), Failure> {
        let mut err = ptr::null_mut();
        // SAFETY: live handles; the key outlives the call.
        unsafe {
            let write = leveldb_writeoptions_create();
            leveldb_delete(self.db, write, key.as_ptr().cast(), key.len(), &mut err);
            leveldb_writeoptions_destroy(write);
        }
        take_error(err).map_or(Ok(()), Err)
    }

    /// Compacts the whole key range (LevelDB's `CompactRange(nullptr, nullptr)`).
    pub fn compact_all(&self) {
        // SAFETY: live database; NULL bounds mean the whole range.
        unsafe { leveldb_compact_range(self.db, ptr::null(), 0, ptr::null(), 0) }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: each handle is owned here and freed once; the database before its options
        // and policy, which it uses until closed.
        unsafe {
            if !self.db.is_null() {
                leveldb_close(self.db);
            }
            leveldb_options_destroy(self.options);
            if !self.policy.is_null() {
                leveldb_filterpolicy_destroy(self.policy);
            }
        }
    }
}
