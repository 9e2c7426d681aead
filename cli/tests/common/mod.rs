//! What the command's tests share: running it, databases written by stock LevelDB, and
//! reading them back. (Not every test uses every helper.)
#![allow(dead_code)]

pub mod stock;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use leveldb_bloom::{AnyPolicy, BloomPolicy};
use leveldb_bloom_cli::leveldb::Db;
use serde_json::Value;

/// What LevelDB's `Table` iterator counts in the table at `path` (-1: it cannot read it).
pub fn leveldb_table_entries(path: &Path) -> i64 {
    leveldb_oracle::table_entries(path).map_or(-1, |n| n as i64)
}

/// LevelDB's own Bloom filters at 10 bits per key, as most databases have them.
pub const BLOOM: AnyPolicy = match BloomPolicy::new(10) {
    Ok(policy) => AnyPolicy::Bloom(policy),
    Err(_) => panic!("10 bits per key is valid"),
};

pub fn command() -> Command {
    as_from_a_terminal(Command::new(env!("CARGO_BIN_EXE_leveldb-bloom")))
}

/// `cmd` started with the signal dispositions a terminal's shell gives a program (interrupt,
/// quit and hangup at their default actions), whatever this test run inherited: started in
/// the background of a script or under `nohup`, it has some of them ignored, and so would
/// every process it starts. Tests that want a signal ignored ignore it themselves.
pub fn as_from_a_terminal(mut cmd: Command) -> Command {
    // SAFETY: between fork and exec only `signal`, which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

pub fn run(args: &[&str]) -> Output {
    command().args(args).output().expect("run leveldb-bloom")
}

/// Runs `cmd`, killing it (and failing) if it has not ended after `limit`: the command must
/// never hang, whatever it reads.
pub fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run leveldb-bloom");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect the output")
}

/// How long a command may take in the fault and judged tests.
pub const LIMIT: Duration = Duration::from_secs(120);

/// Runs the command on `args`, within [`LIMIT`].
pub fn run_bounded(args: &[&str]) -> Output {
    let mut cmd = command();
    cmd.args(args);
    run_within(cmd, LIMIT)
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `from`'s tree copied to `to`, hard links kept links.
pub fn copy_tree(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let out = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "cp -a: {}", text(&out));
}

pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The command ended with `code`, and its messages say each of `said`.
pub fn assert_said(out: &Output, code: i32, said: &[&str]) {
    assert_eq!(out.status.code(), Some(code), "{}", text(out));
    for s in said {
        assert!(stderr(out).contains(s), "{s:?} unsaid: {}", text(out));
    }
}

/// Runs the build `cmd`, failing with its output if it fails; `what` names it and what it
/// needs installed.
pub fn build(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(out.status.success(), "{what}: {}", text(&out));
}

pub fn inspect_json(path: &Path) -> Value {
    let out = run(&["inspect", "--json", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON")
}

/// Sequential numeric keys (LevelDB's hash is weakest on these) and some random-looking ones.
pub fn key(i: u64) -> Vec<u8> {
    if i.is_multiple_of(3) {
        format!("user{i:012}").into_bytes()
    } else {
        let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        format!("k{h:016x}").into_bytes()
    }
}

/// What every key of a database should read.
pub type Expected = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes a database with stock LevelDB: `n` keys, every 7th overwritten and every 11th
/// deleted after a first compaction (so tables hold older versions and deletion markers),
/// then compacted again. Returns what every key should read.
pub fn write_db(dir: &Path, filters: Option<AnyPolicy>, snappy: bool, n: u64) -> Expected {
    let mut expected = BTreeMap::new();
    let db = Db::open(dir, filters, snappy, true).expect("create the database");
    for i in 0..n {
        let value = format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
        db.put(&key(i), &value).unwrap();
        expected.insert(key(i), value);
    }
    db.compact_all();
    for i in (0..n).step_by(7) {
        let value = format!("new-{i}").into_bytes();
        db.put(&key(i), &value).unwrap();
        expected.insert(key(i), value);
    }
    for i in (0..n).step_by(11) {
        db.delete(&key(i)).unwrap();
        expected.remove(&key(i));
    }
    // Reopening writes the log's records into a level-0 table of their own (LevelDB's
    // recovery), on top of the compacted rest.
    drop(db);
    drop(Db::open(dir, filters, snappy, false).expect("reopen"));
    expected
}

/// A database of `n` records (values made by `value`) without filters, uncompressed (so
/// that blocks can be edited in place), compacted into a few tables.
pub fn unfiltered_db(dir: &Path, n: u64, value: impl Fn(u64) -> String) -> Expected {
    let mut expected = Expected::new();
    let db = Db::open(dir, None, false, true).expect("create the database");
    for i in 0..n {
        let value = value(i).into_bytes();
        db.put(&key(i), &value).unwrap();
        expected.insert(key(i), value);
    }
    db.compact_all();
    expected
}

/// A scratch directory holding, at `<scratch>/db`, a database of `n` records that stock
/// LevelDB wrote with its Bloom filters (10 bits per key, snappy) as [`write_db`] writes
/// them; and what every key reads.
pub fn bloom_db(n: u64) -> (tempfile::TempDir, PathBuf, Expected) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let expected = write_db(&dir, Some(BLOOM), true, n);
    (tmp, dir, expected)
}

/// How many of `expected`'s records (of keys `key(0..n)`) stock LevelDB, with its own Bloom
/// policy (which answers compact filters "may match"), reads back as they should be;
/// `Err` with LevelDB's message if it cannot open the database.
pub fn records_read_back(dir: &Path, expected: &Expected, n: u64) -> Result<u64, String> {
    let db = Db::open(dir, Some(BLOOM), true, false).map_err(|e| e.to_string())?;
    Ok((0..n)
        .filter(|&i| db.get(&key(i)).ok().flatten().as_ref() == expected.get(&key(i)))
        .count() as u64)
}

/// Every record reads back through stock LevelDB.
pub fn assert_reads(dir: &Path, expected: &Expected, n: u64) {
    assert_eq!(
        records_read_back(dir, expected, n),
        Ok(n),
        "{}",
        dir.display()
    );
}

pub fn live_tables(dir: &Path) -> Vec<PathBuf> {
    leveldb_bloom_cli::manifest::current_version(dir)
        .unwrap()
        .live
        .into_iter()
        .map(|t| t.path)
        .collect()
}

/// Copies the files of the database in `from` into a new directory `to`.
pub fn copy_db(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// The database's files and their bytes (LevelDB's info logs and LOCK left out: LevelDB
/// writes them whenever it opens the database).
pub fn data_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .filter(|(name, _)| !matches!(name.as_str(), "LOG" | "LOG.old" | "LOCK"))
        .map(|(name, p)| (name, std::fs::read(p).unwrap()))
        .collect()
}

/// LevelDB's varint encoding of `v`, appended to `out`.
pub fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The MANIFEST `CURRENT` names.
pub fn manifest_of(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(current.trim_end())
}

/// Appends a version edit to the database's MANIFEST as one whole log record (in the next
/// block if it does not fit this one, as LevelDB's log writer does).
pub fn append_edit(dir: &Path, edit: Vec<u8>) {
    let manifest = manifest_of(dir);
    let mut bytes = std::fs::read(&manifest).unwrap();
    let left = 32768 - bytes.len() % 32768;
    assert!(7 + edit.len() <= 32768, "the edit fits a block");
    if left < 7 + edit.len() {
        bytes.resize(bytes.len() + left, 0);
    }
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[1]), &edit);
    bytes.extend_from_slice(&leveldb_bloom_cli::table::mask_crc(crc).to_le_bytes());
    bytes.extend_from_slice(&(edit.len() as u16).to_le_bytes());
    bytes.push(1);
    bytes.extend_from_slice(&edit);
    std::fs::write(manifest, bytes).unwrap();
}

/// A version edit of one MANIFEST field (LevelDB's tag and a varint).
pub fn field_edit(tag: u8, value: u64) -> Vec<u8> {
    let mut edit = vec![tag];
    varint(value, &mut edit);
    edit
}

/// The fault shim (`faults/compaction_fault.c`): LevelDB's whole-range compaction loses a
/// record, or the process is killed after it.
pub fn compaction_fault() -> PathBuf {
    shim("compaction_fault", &["-ldl", "-lleveldb"])
}

/// An upgrade of `dir` killed right after LevelDB's rewrite (`faults/compaction_fault.c`),
/// which leaves its way back.
pub fn kill_upgrade_after_rewrite(dir: &Path) {
    let mut cmd = command();
    cmd.args(["upgrade", dir.to_str().unwrap(), "--format", "compact"])
        .env("LD_PRELOAD", compaction_fault())
        .env("LEVELDB_BLOOM_FAULT", "kill");
    let out = run_within(cmd, LIMIT);
    assert_eq!(out.status.code(), None, "killed: {}", text(&out));
}

/// The read-error shim (`faults/read_error.c`): reads of the file named by
/// `LEVELDB_BLOOM_FAULT_FILE` fail with EIO.
pub fn read_error() -> PathBuf {
    shim("read_error", &["-ldl"])
}

/// The power-cut shim (`faults/power_cut.c`).
pub fn power_cut() -> PathBuf {
    shim("power_cut", &["-ldl", "-lpthread"])
}

/// A shim of `faults/`, built once per test binary as a shared library to preload.
fn shim(name: &str, libs: &[&str]) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let built_at = tmp.join(format!("{name}.so"));
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.iter().any(|b| b == name) {
        return built_at;
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/faults/{name}.c"));
    // Built under a name of its own, then renamed: another test binary running at once never
    // loads a half-written library.
    let scratch = tmp.join(format!("{name}.{}.so", std::process::id()));
    build(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&scratch)
            .arg(&source)
            .args(libs),
        &format!("cc, building {name}"),
    );
    std::fs::rename(&scratch, &built_at).unwrap();
    built.push(name.to_owned());
    built_at
}
