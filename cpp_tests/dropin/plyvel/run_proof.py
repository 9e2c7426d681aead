"""Proves that `pip install leveldb-bloom` brings a `leveldb-bloom` command that serves
plyvel's wheel, as a user runs it, with nothing else installed.

Usage: python run_proof.py WORK_DIR   (with the interpreter of a virtual environment holding
the leveldb-bloom wheel and plyvel's; the command is that environment's console script)

  - `leveldb-bloom run --format compact -- python program.py DB` (program.py is an
    ordinary plyvel program): the program's own output and status, a summary that says its
    LevelDB was served, compact filters built and absent keys ruled out;
  - the database's tables then carry compact filters (the command's own inspect), and plyvel
    without the drop-in reads every pair the program wrote;
  - the command is the program the package carries, reached through the console script and
    `python -m leveldb_bloom`: a program killed by SIGPIPE under `run` ends the command by
    SIGPIPE too (Python ignores SIGPIPE for itself; the script must not pass that on); the
    script runs the command with its caller's output closed, and with `LEVELDB_BLOOM_LIB`
    naming no library (the command loads none of the package's); `upgrade`,
    which needs LevelDB linked, says so with status 2 and changes nothing.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from carrier_proof import parse, read_whole, report  # noqa: E402

BIN = Path(sys.executable).parent
COMMAND = str(BIN / "leveldb-bloom")


def main(work):
    work = Path(work)
    failures = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVELDB_BLOOM_")}
    env.pop("LD_PRELOAD", None)

    # The workload under run, in the compact format.
    db, summary_file = work / "db", work / "summary.json"
    done = subprocess.run(
        [COMMAND, "run", "--format", "compact", "--bits-per-key", "10", "--stats",
         str(summary_file), "--", sys.executable, str(HERE / "program.py"), str(db)],
        env=env, capture_output=True, text=True, check=False)
    print(f"run_proof: {done.stderr.strip()}")
    if done.returncode != 0:
        sys.exit(f"run_proof: leveldb-bloom run exited {done.returncode}\n{done.stdout}")
    written = parse(done.stdout)
    summary = json.loads(summary_file.read_text())
    checks = {
        "status 0": summary["status"] == 0,
        "the wheel's LevelDB served, its C API writing": summary["policies_served"] >= 1
        and len(summary["served"]) == 1
        and "plyvel.libs/libleveldb" in summary["served"][0]
        and summary["served"][0].endswith("served, its C API writes"),
        "nothing declined": not summary["declined"] and not summary["refused"],
        "compact filters built": summary["filters_built"] > 0,
        "90% of absent keys ruled out": summary["no_match"] * 10
        >= int(written["absent_lookups"]) * 9,
        "table reads saved": summary["table_reads_saved"] > 0,
        "summary says served": " served, 0 declined" in done.stderr,
    }
    failures += [f"run: expected {what}: {summary}" for what, ok in checks.items() if not ok]

    # What it wrote: compact filters, which stock LevelDB reads whole.
    inspected = subprocess.run([COMMAND, "inspect", "--json", str(db)], env=env,
                               capture_output=True, text=True, check=False)
    total = json.loads(inspected.stdout)["total"] if inspected.returncode == 0 else {}
    if not total.get("filters") or total.get("compact_filters") != total.get("filters"):
        failures.append(f"inspect: exit {inspected.returncode}, filters {total}")
    count, digest = read_whole([sys.executable, str(HERE / "program.py")], db)
    if count != int(written["present_lookups"]) or digest != written["digest"]:
        failures.append(f"plyvel without the drop-in read {count} pairs, digest {digest}; "
                        f"the program wrote {written['present_lookups']}, {written['digest']}")
    print(f"run_proof: {total.get('compact_filters')} of {total.get('filters')} filters "
          f"compact; plyvel without the drop-in read {count} pairs, digest {digest}")

    # The console script and python -m give the program what a shell would.
    for how in ([COMMAND], [sys.executable, "-m", "leveldb_bloom"]):
        piped = subprocess.Popen([*how, "run", "--", "yes"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env)
        piped.stdout.read(4096)
        piped.stdout.close()
        status = piped.wait()
        if status != -signal.SIGPIPE:
            failures.append(f"{' '.join(how)} run -- yes, its reader gone: status {status}, "
                            "not killed by SIGPIPE as yes was")
    # The console script with its caller's output closed, and with a library override that
    # names nothing: the command runs all the same (it loads no library of the package's).
    marker = work / "ran"
    closed = subprocess.run([COMMAND, "run", "--", "touch", str(marker)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            pass_fds=(), close_fds=True, preexec_fn=lambda: os.close(1),
                            check=False)
    if closed.returncode != 0 or not marker.exists():
        failures.append(f"run with standard output closed: status {closed.returncode}, "
                        f"the program ran: {marker.exists()}")
    shown = subprocess.run([COMMAND, "--version"], capture_output=True, text=True,
                           env=dict(env, LEVELDB_BLOOM_LIB="/nonexistent/libleveldb_bloom.so"),
                           check=False)
    if shown.returncode != 0 or not shown.stdout.startswith("leveldb-bloom "):
        failures.append(f"--version with LEVELDB_BLOOM_LIB naming nothing: status "
                        f"{shown.returncode}, {shown.stdout!r} {shown.stderr!r}")

    before = sorted((p.name, p.stat().st_size) for p in db.iterdir())
    refused = subprocess.run([COMMAND, "upgrade", str(db), "--format", "bloom"], env=env,
                             capture_output=True, text=True, check=False)
    after = sorted((p.name, p.stat().st_size) for p in db.iterdir())
    if refused.returncode != 2 or "no LevelDB" not in refused.stderr or before != after:
        failures.append(f"upgrade: status {refused.returncode}, {refused.stderr!r}; "
                        f"files unchanged: {before == after}")

    report(failures, "run_proof: the pip-installed command served plyvel's wheel")


if __name__ == "__main__":
    main(*sys.argv[1:])
