"""Proves the preloaded drop-in serves a LevelDB program as its users install it (plyvel's
wheel, Node.js addons from npm, each carrying its own LevelDB), and changes nothing stored.

Usage: python3 carrier_proof.py DROPIN_SO WORK_DIR NAME LEVELDB BLOOM_WRITER COMPACT_WRITER \
           COMPACT_BUILDS -- COMMAND...

COMMAND DB_DIR writes a workload and reads it back, printing name=value lines (puts,
deletes, present_lookups, absent_lookups, digest); COMMAND --read DB_DIR reads a database
whole (pairs, digest). It runs three times, each on a new database with
LEVELDB_BLOOM_STATS_FILE set:

  stock     without the drop-in            -> no statistics file
  bloom     LD_PRELOAD=DROPIN_SO           -> same output, every table byte-identical
  compact   the same, LEVELDB_BLOOM_FORMAT=compact -> same output

and the drop-in's statistics must show that it served every policy, that the LevelDB served
is the one whose path holds LEVELDB, written as BLOOM_WRITER (bloom) or COMPACT_WRITER
(compact) says, building Bloom filters or, asked for compact ones, COMPACT_BUILDS (compact,
or bloom where the LevelDB has nothing to write compact filters with), and that it answered
the lookups: no_match covers at least
90% of the absent lookups, each of which asks one filter. Then the program without the
drop-in reads each drop-in database whole: the pairs the stock run wrote.
"""

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path


def parse(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def environment(dropin, stats, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVELDB_BLOOM_")}
    env.pop("LD_PRELOAD", None)
    if stats:
        env["LEVELDB_BLOOM_STATS_FILE"] = str(stats)
    if dropin:
        env["LD_PRELOAD"] = dropin
    env.update(extra)
    return env


def run(name, command, arrangement, dropin, work, extra_env):
    directory = work / arrangement
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    stats = directory / "stats.txt"
    done = subprocess.run([*command, str(directory / "db")],
                          env=environment(dropin, stats, extra_env),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{name} [{arrangement}]: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return directory, done.stdout, stats


def read_whole(command, db):
    """Every pair of the database as the program reads it without the drop-in."""
    done = subprocess.run([*command, "--read", str(db)], env=environment(None, None, {}),
                          capture_output=True, text=True, check=False)
    read = parse(done.stdout) if done.returncode == 0 else {}
    return int(read.get("pairs", -1)), read.get("digest")


def served_by(text, leveldb, writer):
    """Whether every LevelDB the statistics say was served is `leveldb`, written by `writer`."""
    served = [line for line in text.splitlines() if line.startswith("leveldb=")]
    return bool(served) and all(leveldb in line and f": served, {writer}" in line
                                for line in served)


def main(dropin, work, name, leveldb, bloom_writer, compact_writer, compact_builds, separator,
         *command):
    if separator != "--" or not command:
        sys.exit(__doc__)
    work = Path(work)
    failures = []
    stock_dir, stock_out, stock_stats = run(name, command, "stock", None, work, {})
    expected = parse(stock_out)
    if stock_stats.exists():
        failures.append("stock: a statistics file, without the drop-in")
    stock_tables = sorted(p.name for p in (stock_dir / "db").glob("*.ldb"))
    if not stock_tables:
        failures.append("stock: no table written")
    print(f"{name} [stock]: {' '.join(stock_out.split())}; tables {stock_tables}")

    for arrangement, env in (("bloom", {}), ("compact", {"LEVELDB_BLOOM_FORMAT": "compact"})):
        directory, out, stats_path = run(name, command, arrangement, dropin, work, env)
        if out != stock_out:
            failures.append(f"{arrangement}: output differs from stock's:\n{out}")
        if not stats_path.exists():
            failures.append(f"{arrangement}: no statistics file: the drop-in did not serve")
            continue
        text = stats_path.read_text()
        stats = parse(text)
        counts = {k: int(v) for k, v in stats.items() if v.isdigit()}
        writer = compact_writer if arrangement == "compact" else bloom_writer
        builds = compact_builds if arrangement == "compact" else "bloom"
        checks = {
            "served=yes": stats.get("served") == "yes",
            f"format={builds}": stats.get("format") == builds,
            "every policy served": counts.get("dropin_policies", 0) > 0
            and counts.get("policies_served") == counts.get("dropin_policies"),
            f"its LevelDB ({leveldb}) served, \"{writer}\"": served_by(text, leveldb, writer),
            "filters built": counts.get("filters_built", 0) > 0,
            "keys_added >= puts": counts.get("keys_added", 0) >= int(expected["puts"]),
            "queries >= present lookups": counts.get("queries", 0)
            >= int(expected["present_lookups"]),
            "no_match >= 90% of absent lookups": counts.get("no_match", 0) * 10
            >= int(expected["absent_lookups"]) * 9,
        }
        failures += [f"{arrangement}: expected {what}: {stats}" for what, ok in checks.items()
                     if not ok]
        tables = sorted(p.name for p in (directory / "db").glob("*.ldb"))
        shown = ""
        if arrangement == "bloom":
            same = [t for t in tables if t in stock_tables
                    and filecmp.cmp(stock_dir / "db" / t, directory / "db" / t, shallow=False)]
            if tables != stock_tables or same != tables:
                failures.append(f"bloom: tables {tables}, byte-identical to stock's: {same}")
            shown = f"{len(same)}/{len(tables)} tables byte-identical to stock's; "
        count, digest = read_whole(command, directory / "db")
        if count != int(expected["present_lookups"]) or digest != expected["digest"]:
            failures.append(f"{arrangement}: the program without the drop-in read {count} "
                            f"pairs, digest {digest}")
        print(f"{name} [{arrangement}]: output identical; {shown}read whole without the "
              f"drop-in: {count} pairs, the stock run's digest; stats: {' '.join(text.split())}")

    report(failures, f"{name}: the preloaded drop-in served both formats; nothing stored changed")


def report(failures, success):
    """Prints each failure and exits 1, or prints `success`."""
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(success)


if __name__ == "__main__":
    main(*sys.argv[1:])
