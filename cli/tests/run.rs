//! `leveldb-bloom run`: an ordinary LevelDB program (`run/leveldb_program.c`, Debian's
//! LevelDB) run with the drop-in preloaded, as a user runs it: served, its exit status and
//! signals passed through, its children followed (a shell script starting two), a static
//! and a set-user-ID program reported as out of a preload's reach; and the tables it wrote
//! read back by stock LevelDB. (plyvel's wheel in a fresh virtual environment is
//! `scripts/dropin-bundled`'s.)

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use leveldb_bloom_cli::leveldb::Db;
use serde_json::Value;

/// The test program, built once (`static` adds a statically linked copy).
fn program(variant: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let binary = tmp.join(format!("leveldb_program_{variant}"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run/leveldb_program.c");
    let mut cc = Command::new("cc");
    cc.arg(&source).arg("-o").arg(&binary);
    if variant == "static" {
        cc.args([
            "-static",
            "-lleveldb",
            "-lsnappy",
            "-lstdc++",
            "-lpthread",
            "-lm",
        ]);
    } else {
        cc.arg("-lleveldb");
    }
    let built = cc.output().expect("run cc");
    assert!(
        built.status.success(),
        "building the program: {}",
        text(&built)
    );
    binary
}

/// `leveldb-bloom run ARGS`, its summary as JSON (`--stats`), within the test's limit.
fn run_json(args: &[&str], stats: &Path) -> (std::process::Output, Value) {
    let mut cmd = command();
    cmd.arg("run").arg("--stats").arg(stats).args(args);
    let out = run_within(cmd, LIMIT);
    let json = serde_json::from_slice(&std::fs::read(stats).unwrap()).unwrap();
    (out, json)
}

#[test]
fn a_leveldb_program_is_served_and_its_status_is_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = program("dynamic");
    let db = tmp.path().join("db");
    let stats = tmp.path().join("stats.json");
    let (out, json) = run_json(
        &[
            "--format",
            "compact",
            "--bits-per-key",
            "10",
            "--",
            prog.to_str().unwrap(),
            db.to_str().unwrap(),
            "7",
        ],
        &stats,
    );
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    assert!(
        stdout(&out).starts_with("found "),
        "the program's output is its own"
    );
    assert_eq!(json["status"], 7);
    assert_eq!(json["processes"], 1, "{json}");
    assert_eq!(json["leveldbs_cxx11_string"], 1, "{json}");
    assert_eq!(json["format"], "compact");
    assert!(json["filters_built"].as_u64().unwrap() > 0, "{json}");
    let (queries, no_match) = (
        json["queries"].as_u64().unwrap(),
        json["no_match"].as_u64().unwrap(),
    );
    assert!(queries >= 19_000 && no_match > 19_000, "{json}");
    assert!(json["table_reads_saved"].as_u64().unwrap() > 50, "{json}");
    let said = stderr(&out);
    assert!(
        said.contains("exited 7")
            && said.contains("LevelDBs served: 1")
            && said.contains("ruled out"),
        "{said}"
    );
    // Stock LevelDB reads what it wrote.
    let stock = Db::open(&db, Some(BLOOM), true, false).unwrap();
    for i in (0..20_000).step_by(997) {
        assert_eq!(
            stock.get(format!("key{:08}", 2 * i).as_bytes()).unwrap(),
            Some(b"v".to_vec())
        );
    }
}

#[test]
fn a_shell_script_starting_two_programs_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = program("dynamic");
    let script = tmp.path().join("two.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{p} {d}/one & {p} {d}/two\nwait\n",
            p = prog.display(),
            d = tmp.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (out, json) = run_json(
        &["--", script.to_str().unwrap()],
        &tmp.path().join("s.json"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json["leveldbs_cxx11_string"], 2, "{json}");
    assert_eq!(json["format"], "bloom");
}

#[test]
fn programs_out_of_a_preloads_reach_are_said_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = program("static");
    let (out, json) = run_json(
        &[
            "--",
            prog.to_str().unwrap(),
            tmp.path().join("db").to_str().unwrap(),
            "3",
        ],
        &tmp.path().join("s.json"),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        json["unreachable"]
            .as_str()
            .unwrap()
            .contains("statically linked"),
        "{json}"
    );
    assert_eq!(json["processes"], 0);
    assert!(stderr(&out).contains("not reached"), "{}", text(&out));

    // Set-user-ID: the loader ignores LD_PRELOAD.
    let setuid = tmp.path().join("setuid");
    std::fs::copy(program("dynamic"), &setuid).unwrap();
    std::fs::set_permissions(
        &setuid,
        std::os::unix::fs::PermissionsExt::from_mode(0o4755),
    )
    .unwrap();
    let (out, json) = run_json(
        &[
            "--",
            setuid.to_str().unwrap(),
            tmp.path().join("db2").to_str().unwrap(),
        ],
        &tmp.path().join("s2.json"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        json["unreachable"]
            .as_str()
            .unwrap()
            .contains("set-user-ID"),
        "{json}"
    );
}

#[test]
fn signals_pass_through_as_a_shell_reports_them() {
    let tmp = tempfile::tempdir().unwrap();
    // A program killed by a signal: 128 + n.
    let (out, json) = run_json(
        &["--", "sh", "-c", "kill -TERM $$"],
        &tmp.path().join("a.json"),
    );
    assert_eq!(out.status.code(), Some(143), "{}", text(&out));
    assert_eq!(json["status"], 143);
    // A signal sent to the command reaches the program.
    let mut child = command()
        .args(["run", "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill with a live child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let start = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the program got the signal"
    );
    assert_eq!(status.code(), Some(143));
    // Exit statuses of programs that cannot run, as a shell's.
    let out = run_bounded(&["run", "--", "no-such-program-anywhere"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
}
