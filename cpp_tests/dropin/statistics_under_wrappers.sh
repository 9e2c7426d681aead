#!/bin/sh
# The statistics file tells what happened in the process that used LevelDB, however the
# program was started: under timeout, under sh -c and bash -c (and so from any shell script), with %p
# for one file per process; a process that did nothing overwrites only a file older than
# itself (a stale one), never one its child wrote.
#
#   statistics_under_wrappers.sh PRELOAD PROGRAM WORK_DIR
#
# PRELOAD is the LD_PRELOAD value (the drop-in, after a sanitizer runtime if any); PROGRAM a
# LevelDB program that takes a database directory (dropin_c_stock).
set -eu
preload=$1 program=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "statistics_under_wrappers: $*" >&2; exit 1; }
served() { grep -qx "served=$2" "$1" || fail "$3: $1 does not say served=$2: $(cat "$1" 2>&1)"; }

LD_PRELOAD=$preload LEVELDB_BLOOM_STATS_FILE=$PWD/timeout.txt timeout 600 "$program" db1 >/dev/null
served timeout.txt yes "under timeout"

LD_PRELOAD=$preload LEVELDB_BLOOM_STATS_FILE=$PWD/sh.txt sh -c "'$program' db2 >/dev/null; true"
served sh.txt yes "under sh -c"

LD_PRELOAD=$preload LEVELDB_BLOOM_STATS_FILE=$PWD/bash.txt bash -c "'$program' db4 >/dev/null; true"
served bash.txt yes "under bash -c"

LD_PRELOAD=$preload LEVELDB_BLOOM_STATS_FILE=$PWD/each.%p.txt timeout 600 "$program" db3 >/dev/null
set -- each.*.txt
[ $# -eq 2 ] || fail "%p: expected two files (timeout's and the program's), got: $*"
[ "$(grep -lx served=yes "$@" | wc -l)" -eq 1 ] || fail "%p: one file must say served=yes"
[ "$(grep -lx served=no "$@" | wc -l)" -eq 1 ] || fail "%p: one file must say served=no"

# A file left by an earlier run is older than the process: overwritten, served=no.
echo served=yes > stale.txt
touch -d '1 hour ago' stale.txt
LD_PRELOAD=$preload LEVELDB_BLOOM_STATS_FILE=$PWD/stale.txt timeout 600 true
served stale.txt no "a stale file"
echo "statistics_under_wrappers: timeout, sh -c, %p and a stale file all tell the program's story"
