//! Stock LevelDB (Debian's 1.23, through its C API) reading a database in a process of its
//! own: LevelDB built with assertions aborts on some damage, which must not stop the test
//! that asks. Every test binary that includes `common` holds the reader ([`stock_reader`]),
//! run as a child of the binary itself.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::Path;
use std::ptr;

use super::copy_db;
use leveldb_sys::*;

pub type Records = BTreeMap<Vec<u8>, Vec<u8>>;

/// Stock LevelDB's options: its own Bloom policy (which reads compact filters as "may
/// match"), `paranoid` checks or not.
pub struct Options {
    pub options: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
}

impl Options {
    pub fn new(paranoid: bool, create: bool) -> Options {
        // SAFETY: no preconditions; both objects are owned here and freed in Drop.
        unsafe {
            let options = leveldb_options_create();
            let policy = leveldb_filterpolicy_create_bloom(10);
            leveldb_options_set_filter_policy(options, policy);
            leveldb_options_set_paranoid_checks(options, u8::from(paranoid));
            leveldb_options_set_create_if_missing(options, u8::from(create));
            Options { options, policy }
        }
    }
}

impl Drop for Options {
    fn drop(&mut self) {
        // SAFETY: owned, freed once, after every database opened with them is closed.
        unsafe {
            leveldb_options_destroy(self.options);
            leveldb_filterpolicy_destroy(self.policy);
        }
    }
}

pub fn take_error(err: *mut std::ffi::c_char) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB's error string, NUL-terminated, from malloc; freed once.
    let message = unsafe { std::ffi::CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above.
    unsafe { leveldb_free(err.cast()) };
    Err(message)
}

pub fn open(dir: &Path, options: &Options) -> Result<*mut leveldb_t, String> {
    let name = CString::new(dir.to_str().unwrap()).unwrap();
    let mut err = ptr::null_mut();
    // SAFETY: live options, a NUL-terminated name, a valid out-pointer.
    let db = unsafe { leveldb_open(options.options, name.as_ptr(), &mut err) };
    take_error(err).map(|()| db)
}

/// Every record stock LevelDB's iterator reads (checksums verified), or its error.
pub fn records_of(db: *mut leveldb_t) -> Result<Records, String> {
    let mut records = Records::new();
    let mut err = ptr::null_mut();
    // SAFETY: a live database; the iterator and options are destroyed once; each slice is
    // copied before the iterator moves.
    unsafe {
        let read = leveldb_readoptions_create();
        leveldb_readoptions_set_verify_checksums(read, 1);
        let it = leveldb_create_iterator(db, read);
        leveldb_iter_seek_to_first(it);
        while leveldb_iter_valid(it) != 0 {
            let (mut klen, mut vlen) = (0, 0);
            let key = leveldb_iter_key(it, &mut klen);
            let value = leveldb_iter_value(it, &mut vlen);
            records.insert(
                std::slice::from_raw_parts(key.cast::<u8>(), klen).to_vec(),
                std::slice::from_raw_parts(value.cast::<u8>(), vlen).to_vec(),
            );
            leveldb_iter_next(it);
        }
        leveldb_iter_get_error(it, &mut err);
        leveldb_iter_destroy(it);
        leveldb_readoptions_destroy(read);
    }
    take_error(err).map(|()| records)
}

/// What stock LevelDB reads of a copy of the database in `dir` (opening writes), read in a
/// process of its own ([`stock_reader`]): LevelDB built with assertions aborts on some
/// damage.
pub fn stock_reads(dir: &Path, scratch: &Path, paranoid: bool) -> Result<Records, String> {
    let _ = std::fs::remove_dir_all(scratch);
    copy_db(dir, scratch);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "common::stock::stock_reader",
            "--ignored",
            "--nocapture",
            "--quiet",
        ])
        .env(READ_DIR, scratch)
        .env(READ_PARANOID, if paranoid { "1" } else { "0" })
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(format!("LevelDB stopped: {:?}", out.status));
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = |s: &str| {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect::<Vec<u8>>()
    };
    if !text.lines().any(|l| l == "end") {
        return Err(format!("the stock reader did not run: {text}"));
    }
    let mut records = Records::new();
    for line in text.lines() {
        if let Some(e) = line.strip_prefix("error ") {
            return Err(e.to_string());
        }
        if let Some((k, v)) = line.strip_prefix("record ").and_then(|l| l.split_once(' ')) {
            records.insert(hex(k), hex(v));
        }
    }
    Ok(records)
}

const READ_DIR: &str = "LEVELDB_BLOOM_STOCK_READ_DIR";
const READ_PARANOID: &str = "LEVELDB_BLOOM_STOCK_READ_PARANOID";

/// The stock reader's process: prints every record stock LevelDB reads of the database
/// named in its environment, or its error.
#[test]
#[ignore = "run by the differential test, in a process of its own"]
fn stock_reader() {
    let Some(dir) = std::env::var_os(READ_DIR) else {
        return;
    };
    let options = Options::new(std::env::var(READ_PARANOID).as_deref() == Ok("1"), false);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let read = open(Path::new(&dir), &options).and_then(|db| {
        let read = records_of(db);
        // SAFETY: opened above, closed once.
        unsafe { leveldb_close(db) };
        read
    });
    let mut out = String::new();
    match read {
        Ok(records) => {
            for (k, v) in records {
                out += &format!("record {} {}\n", hex(&k), hex(&v));
            }
        }
        Err(e) => out += &format!("error {}\n", e.replace('\n', " ")),
    }
    out += "end\n";
    print!("{out}");
}
