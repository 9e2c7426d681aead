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
fn program(variant: &'static str) -> PathBuf {
    // Built once per variant: the tests run in parallel, and one must not exec the file
    // while another writes it.
    static BUILT: std::sync::Mutex<Vec<(&str, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap();
    if let Some((_, path)) = built.iter().find(|(v, _)| *v == variant) {
        return path.clone();
    }
    let path = build_program(variant);
    built.push((variant, path.clone()));
    path
}

fn build_program(variant: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let binary = tmp.join(format!("leveldb_program_{variant}"));
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run");
    if variant == "musl" {
        // Debian's musl-tools (the test command installs it): dynamically linked by default.
        build(
            Command::new("musl-gcc")
                .arg(tests.join("musl_program.c"))
                .arg("-o")
                .arg(&binary),
            "musl-gcc (Debian's musl-tools), building the program",
        );
        return binary;
    }
    let mut cc = Command::new("cc");
    cc.arg(tests.join("leveldb_program.c"))
        .arg("-o")
        .arg(&binary);
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
    build(&mut cc, "cc, building the program");
    binary
}

/// The drop-in `run` preloads: the one beside the command.
fn dropin() -> PathBuf {
    let dropin =
        Path::new(env!("CARGO_BIN_EXE_leveldb-bloom")).with_file_name("libleveldb_bloom_dropin.so");
    assert!(
        dropin.is_file(),
        "{}: the drop-in beside the command (cargo build --release -p leveldb-bloom-dropin)",
        dropin.display()
    );
    dropin
}

/// `leveldb-bloom run ARGS`, its summary as JSON (`--stats`), within the test's limit.
fn run_json(args: &[&str], stats: &Path) -> (std::process::Output, Value) {
    dropin();
    let mut cmd = command();
    cmd.arg("run").arg("--stats").arg(stats).args(args);
    let out = run_within(cmd, LIMIT);
    let json =
        std::fs::read(stats).unwrap_or_else(|e| panic!("{}: {e}: {}", stats.display(), text(&out)));
    (out, serde_json::from_slice(&json).unwrap())
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
    assert_eq!(json["policies_served"], 1, "{json}");
    assert!(
        json["served"][0]
            .as_str()
            .unwrap()
            .ends_with("served, its C API writes"),
        "{json}"
    );
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
            && said.contains("policies: 1 served, 0 declined")
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
fn a_relative_statistics_file_is_where_the_program_started_though_it_moves() {
    let tmp = tempfile::tempdir().unwrap();
    let started = tmp.path().join("started");
    let elsewhere = tmp.path().join("elsewhere");
    for dir in [&started, &elsewhere] {
        std::fs::create_dir(dir).unwrap();
    }
    let db = tmp.path().join("db");
    let out = run_within(
        {
            let mut cmd = Command::new(program("dynamic"));
            cmd.arg(&db)
                .args(["0", "0"])
                .arg(&elsewhere)
                .current_dir(&started)
                .env("LD_PRELOAD", dropin())
                .env("LEVELDB_BLOOM_STATS_FILE", "stats.txt");
            cmd
        },
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let written = std::fs::read_to_string(started.join("stats.txt"))
        .unwrap_or_else(|e| panic!("no statistics where the program started: {e}"));
    assert!(written.lines().any(|l| l == "served=yes"), "{written}");
    assert!(
        !elsewhere.join("stats.txt").exists(),
        "the statistics follow the program's moves"
    );
}

#[test]
fn forked_children_count_their_own_work_only() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = program("dynamic");
    let db = tmp.path().join("db");
    let (out, json) = run_json(
        &["--", prog.to_str().unwrap(), db.to_str().unwrap(), "0", "3"],
        &tmp.path().join("s.json"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(json["processes"], 4, "{json}");
    assert_eq!(json["policies_served"], 1, "{json}");
    assert_eq!(json["served"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["keys_added"], 20_000, "{json}");
}

#[test]
fn a_shell_script_starting_programs_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = program("dynamic");
    let script = tmp.path().join("two.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{p} {d}/one & {p} {d}/two\nwait\nLEVELDB_BLOOM_FORMAT=compact {p} {d}/three\n",
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
    assert_eq!(json["policies_served"], 3, "{json}");
    // The third program chose its own format: the summary says both.
    assert_eq!(json["format"], "bloom,compact", "{json}");
}

#[test]
fn programs_out_of_a_preloads_reach_are_said_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = program("static");
    let (out, json) = run_unreached(
        &[
            prog.to_str().unwrap(),
            tmp.path().join("db").to_str().unwrap(),
            "3",
        ],
        &tmp.path().join("s.json"),
        3,
        &["statically linked"],
    );
    assert_eq!(json["processes"], 0);
    assert!(stderr(&out).contains("not reached"), "{}", text(&out));

    // A musl program: its loader would not start it with a glibc library preloaded, so it
    // runs without, and the summary says why.
    let (out, _) = run_unreached(
        &[program("musl").to_str().unwrap(), "5"],
        &tmp.path().join("musl.json"),
        5,
        &["ld-musl", "not glibc's"],
    );
    assert_eq!(stdout(&out), "musl program ran\n");
    assert!(
        stderr(&out).contains("it ran without the drop-in"),
        "{}",
        text(&out)
    );

    // Set-user-ID to another user: the loader ignores LD_PRELOAD. (Set-user-ID to the
    // caller changes no id, and is reached.)
    let setuid = tmp.path().join("setuid");
    std::fs::copy(program("dynamic"), &setuid).unwrap();
    // A folder the other user may write its database in.
    let writable = tmp.path().join("anyone");
    std::fs::create_dir(&writable).unwrap();
    std::fs::set_permissions(
        &writable,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    // SAFETY: getuid has no preconditions.
    let other = if unsafe { libc::getuid() } == 0 {
        65534
    } else {
        0
    };
    if std::os::unix::fs::chown(&setuid, Some(other), None).is_err() {
        println!("not run: a set-user-ID program of another user (chown needs root)");
        return;
    }
    std::fs::set_permissions(
        &setuid,
        std::os::unix::fs::PermissionsExt::from_mode(0o4755),
    )
    .unwrap();
    run_unreached(
        &[
            setuid.to_str().unwrap(),
            writable.join("db2").to_str().unwrap(),
        ],
        &tmp.path().join("s2.json"),
        0,
        &["set-user-ID"],
    );
}

/// `run -- PROGRAM ARGS` of a program a preload cannot reach: it runs, exits `status`, and
/// the summary's `unreachable` says why (each of `why` in it).
fn run_unreached(
    program: &[&str],
    stats: &Path,
    status: i32,
    why: &[&str],
) -> (std::process::Output, Value) {
    let (out, json) = run_json(&[&["--"], program].concat(), stats);
    assert_eq!(out.status.code(), Some(status), "{}", text(&out));
    let said = json["unreachable"].as_str().unwrap();
    assert!(why.iter().all(|w| said.contains(w)), "{json}");
    (out, json)
}

/// `run -- sleep 30`, started: a program that runs until a signal ends it.
fn sleeping_program() -> std::process::Child {
    command()
        .args(["run", "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for `child`, which must end by `signal` within 10 s (what the program got).
fn ends_by(mut child: std::process::Child, signal: libc::c_int, what: &str) {
    let start = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{what}: the signal was lost"
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(signal),
        "{what}"
    );
}

#[test]
fn signals_pass_through_as_a_shell_reports_them() {
    let tmp = tempfile::tempdir().unwrap();
    // A program killed by a signal: the command ends by that signal too (a shell says
    // 128 + n); the summary says 128 + n.
    let signal =
        |status: &std::process::ExitStatus| std::os::unix::process::ExitStatusExt::signal(status);
    let (out, json) = run_json(
        &["--", "sh", "-c", "kill -TERM $$"],
        &tmp.path().join("a.json"),
    );
    assert_eq!(signal(&out.status), Some(libc::SIGTERM), "{}", text(&out));
    assert_eq!(json["status"], 143);
    // A signal sent to the command reaches the program.
    let child = sleeping_program();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill with a live child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    ends_by(child, libc::SIGTERM, "kill");
    // Exit statuses of programs that cannot run, as a shell's.
    let out = run_bounded(&["run", "--", "no-such-program-anywhere"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    // The command ends by the program's signal, so that a calling shell stops its loop on
    // Ctrl-C as it would for the program.
    let out = run_bounded(&["run", "--", "sh", "-c", "kill -INT $$"]);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGINT)
    );
}

#[test]
fn a_status_above_128_is_said_as_an_exit_and_a_signal_as_a_signal() {
    // A program may exit with any status up to 255 (a shell whose child a signal ended
    // exits 128 + n itself): the summary says how it ended, not what the number looks like.
    let out = run_bounded(&["run", "--", "sh", "-c", "exit 200"]);
    assert_eq!(out.status.code(), Some(200), "{}", text(&out));
    assert!(stderr(&out).contains("sh exited 200"), "{}", text(&out));
    assert!(!stderr(&out).contains("killed by signal"), "{}", text(&out));
    let out = run_bounded(&["run", "--", "sh", "-c", "kill -TERM $$"]);
    assert!(
        stderr(&out).contains("sh was killed by signal 15"),
        "{}",
        text(&out)
    );
}

#[test]
fn every_signal_a_process_sends_reaches_the_program_even_at_once() {
    // USR1 (and the like) reach the program, which may handle them, instead of ending the
    // command while the program runs on. (The handler stops its sleep: left running, it
    // would hold the output open for its 30 s.)
    let out = shell(
        "\"$0\" run -- sh -c 'sleep 30 >/dev/null & trap \"kill $!; echo got-usr1; exit 7\" USR1; \
         wait' 2>/dev/null & sleep 0.5; kill -USR1 $!; wait $!; echo \"status $?\"",
    );
    assert_eq!(stdout(&out), "got-usr1\nstatus 7\n", "{}", text(&out));
    // A signal sent as the command starts, before the program's process exists, is passed
    // on when it does, never lost.
    for delay in 0..20u64 {
        let child = sleeping_program();
        std::thread::sleep(Duration::from_micros(delay * 250));
        // SAFETY: kill with a live child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        ends_by(child, libc::SIGTERM, &format!("delay {delay}"));
    }
}

#[test]
fn a_thread_directed_signal_and_a_terminal_s_hangup_reach_the_program() {
    // tgkill, as a thread library sends it.
    let child = sleeping_program();
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id() as libc::pid_t;
    // SAFETY: tgkill with a live child's process and thread ID (its main thread's).
    unsafe { libc::syscall(libc::SYS_tgkill, pid, pid, libc::SIGTERM) };
    ends_by(child, libc::SIGTERM, "tgkill");

    // The command leads a session on a terminal (ssh -t host leveldb-bloom run ...), which
    // hangs up: the kernel tells the leader alone, and the program must hear of it.
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two descriptors; the NULL arguments ask for defaults.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty");
    let mut cmd = command();
    cmd.args(["run", "--", "sleep", "30"]).stderr(Stdio::null());
    // SAFETY: between fork and exec only async-signal-safe calls: a new session whose
    // controlling terminal is the pty, on the standard streams (`command` has set the
    // hangup's default action, as a login session has it).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            libc::setsid();
            libc::ioctl(slave, libc::TIOCSCTTY, 0);
            libc::dup2(slave, 0);
            libc::dup2(slave, 1);
            libc::close(master);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // SAFETY: the parent's copy of the terminal's side, closed once.
    unsafe { libc::close(slave) };
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: the master side, closed once: the terminal hangs up.
    unsafe { libc::close(master) };
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&status),
                Some(libc::SIGHUP)
            );
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("after the terminal hung up, the command and its program ran on");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bits_per_key_a_format_does_not_take_are_refused_before_the_program_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let ran = tmp.path().join("ran");
    for (format, bits) in [
        ("compact", "100"),
        ("compact", "NaN"),
        ("bloom", "0.5"),
        ("bloom", "-5"),
    ] {
        let out = run_bounded(&[
            "run",
            "--format",
            format,
            &format!("--bits-per-key={bits}"),
            "--",
            "touch",
            ran.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{format} {bits}: {}",
            text(&out)
        );
        assert!(text(&out).contains("--bits-per-key"), "{}", text(&out));
        assert!(!ran.exists(), "{format} {bits}: the program ran");
    }
}

#[test]
fn the_program_sees_its_own_name_and_scripts_always_get_a_summary() {
    let tmp = tempfile::tempdir().unwrap();
    // argv[0] as given, not the path the command found.
    let out = run_bounded(&["run", "--", "sh", "-c", "echo \"$0\""]);
    assert_eq!(stdout(&out), "sh\n", "{}", text(&out));
    // A program that cannot be run still gets its summary, with a shell's status.
    let (out, json) = run_json(
        &["--", "no-such-program-anywhere"],
        &tmp.path().join("a.json"),
    );
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    assert_eq!(json["status"], 127);
    // Bits per key: the number given, or null for the program's own.
    let (_, json) = run_json(
        &[
            "--format",
            "compact",
            "--bits-per-key",
            "12.5",
            "--",
            "true",
        ],
        &tmp.path().join("b.json"),
    );
    assert_eq!(json["bits_per_key"], 12.5, "{json}");
    let (_, json) = run_json(
        &["--format", "compact", "--", "true"],
        &tmp.path().join("c.json"),
    );
    assert!(json["bits_per_key"].is_null(), "{json}");
    assert_eq!(json["format"], "compact", "{json}");
}

/// `sh -c script`, with the command as `$0`: the command as a caller starts it.
fn shell(script: &str) -> std::process::Output {
    as_from_a_terminal(Command::new("sh"))
        .args(["-c", script, env!("CARGO_BIN_EXE_leveldb-bloom")])
        .output()
        .unwrap()
}

#[test]
fn what_the_caller_gave_reaches_the_program_unchanged() {
    // Closed standard streams stay closed (echo fails as it does directly), ignored
    // signals stay ignored (nohup), and a file without "#!" runs as a shell script.
    let closed = shell("\"$0\" run -- /bin/echo hi >&- 2>/dev/null; echo $?");
    let direct = shell("/bin/echo hi >&- 2>/dev/null; echo $?");
    assert_eq!(String::from_utf8_lossy(&direct.stdout), "1\n");
    assert_eq!(closed.stdout, direct.stdout, "{}", text(&closed));
    let nohup = shell("trap '' HUP; \"$0\" run -- sh -c 'kill -HUP $$; echo survived' 2>/dev/null");
    assert_eq!(
        (
            nohup.status.code(),
            String::from_utf8_lossy(&nohup.stdout).as_ref()
        ),
        (Some(0), "survived\n"),
        "{}",
        text(&nohup)
    );
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("no-shebang");
    std::fs::write(&script, "echo from the script; exit 4\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = run_bounded(&["run", "--", script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert_eq!(stdout(&out), "from the script\n");
    // A summary that cannot be written, or no folder for the statistics: the program's
    // status still.
    let out = run_bounded(&[
        "run",
        "--stats",
        "/nonexistent/s.json",
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let mut cmd = command();
    cmd.args(["run", "--", "sh", "-c", "exit 5"])
        .env("TMPDIR", "/nonexistent");
    let out = run_within(cmd, LIMIT);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
}
