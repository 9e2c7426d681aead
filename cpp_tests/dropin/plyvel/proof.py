"""Proves the preloaded drop-in serves plyvel as pip installs it (a manylinux wheel that
carries its own LevelDB, built with libstdc++'s old std::string), and changes nothing stored.

Usage: python proof.py DROPIN_SO WORK_DIR   (run with the interpreter of plyvel's venv)

program.py runs three times, each on a new database with LEVELDB_BLOOM_STATS_FILE set:

  stock     without the drop-in            -> no statistics file
  bloom     LD_PRELOAD=DROPIN_SO           -> same output, every table byte-identical
  compact   the same, LEVELDB_BLOOM_FORMAT=compact -> same output

and the drop-in's statistics must show that it made every policy (with old strings, as
the wheel's LevelDB was built), built the filters and answered the lookups: no_match covers
at least 90% of the absent lookups, each of which asks one filter. Then plyvel without the
drop-in reads the compact database whole: the same pairs as the stock run wrote.
"""

import filecmp
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def run(arrangement, dropin, work, extra_env):
    directory = work / arrangement
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    stats = directory / "stats.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVELDB_BLOOM_")}
    env.pop("LD_PRELOAD", None)
    env["LEVELDB_BLOOM_STATS_FILE"] = str(stats)
    if dropin:
        env["LD_PRELOAD"] = dropin
    env.update(extra_env)
    done = subprocess.run([sys.executable, str(HERE / "program.py"), str(directory / "db")],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"plyvel [{arrangement}]: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return directory, done.stdout, stats


def read_whole(db):
    """Every pair of the database, read by plyvel in this process (no drop-in here)."""
    import plyvel

    digest = hashlib.sha256()
    count = 0
    with plyvel.DB(str(db)) as handle:
        for k, v in handle:
            digest.update(k + b"=" + v + b"\n")
            count += 1
    return count, digest.hexdigest()


def main(dropin, work):
    work = Path(work)
    failures = []
    stock_dir, stock_out, stock_stats = run("stock", None, work, {})
    expected = parse(stock_out)
    if stock_stats.exists():
        failures.append("stock: a statistics file, without the drop-in")
    stock_tables = sorted(p.name for p in (stock_dir / "db").glob("*.ldb"))
    if not stock_tables:
        failures.append("stock: no table written")
    print(f"plyvel [stock]: {' '.join(stock_out.split())}; tables {stock_tables}")

    for arrangement, env in (("bloom", {}), ("compact", {"LEVELDB_BLOOM_FORMAT": "compact"})):
        directory, out, stats_path = run(arrangement, dropin, work, env)
        if out != stock_out:
            failures.append(f"{arrangement}: output differs from stock's:\n{out}")
        if not stats_path.exists():
            failures.append(f"{arrangement}: no statistics file: the drop-in did not serve")
            continue
        stats = parse(stats_path.read_text())
        counts = {k: int(v) for k, v in stats.items() if v.isdigit()}
        checks = {
            "served=yes": stats.get("served") == "yes",
            f"format={arrangement}": stats.get("format") == arrangement,
            "two policies made": counts.get("dropin_policies") == 2,
            "its LevelDB served with old strings": counts.get("leveldbs_old_string") == 1
            and counts.get("leveldbs_cxx11_string") == 0,
            "no LevelDB declined": counts.get("leveldbs_declined") == 0
            and counts.get("filters_built_by_stock") == 0,
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
        if arrangement == "bloom":
            same = [t for t in tables if t in stock_tables
                    and filecmp.cmp(stock_dir / "db" / t, directory / "db" / t, shallow=False)]
            if tables != stock_tables or same != tables:
                failures.append(f"bloom: tables {tables}, byte-identical to stock's: {same}")
            shown = f"{len(same)}/{len(tables)} tables byte-identical to stock's"
        else:
            count, digest = read_whole(directory / "db")
            if count != int(expected["present_lookups"]) or digest != expected["digest"]:
                failures.append(f"compact: plyvel without the drop-in read {count} pairs, "
                                f"digest {digest}")
            shown = f"read whole without the drop-in: {count} pairs, the stock run's digest"
        print(f"plyvel [{arrangement}]: output identical; {shown}; stats: "
              f"{' '.join(stats_path.read_text().split())}")

    report(failures, "plyvel: the preloaded drop-in served both formats; nothing stored changed")


def report(failures, success):
    """Prints each failure and exits 1, or prints `success`."""
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(success)


if __name__ == "__main__":
    main(*sys.argv[1:])
