#!/bin/sh
# many_host with 300 plugins loaded at once, 200 of LevelDB's Bloom policy and 100 of a fork's
# that gives LevelDB's name to another filter, stock and with the drop-in preloaded in both
# formats: the same output as stock, and statistics exact for every one of them (200 served,
# 100 declined, each said once).
#
#   run_many.sh DROPIN_SO HOST PLUGIN FORK_PLUGIN WORK_DIR
set -u
dropin=$1 host=$2 plugin=$3 fork=$4 work=$5
rm -rf "$work"
mkdir -p "$work/plugins"
fail() { echo "run_many: FAILED: $*" >&2; exit 1; }
i=0
while [ $i -lt 300 ]; do
  # Every third a fork's, in turn with LevelDB's.
  if [ $((i % 3)) -eq 2 ]; then from=$fork; else from=$plugin; fi
  cp "$from" "$work/plugins/$(printf 'p%03d' $i).so"
  i=$((i + 1))
done
set -- "$work"/plugins/*.so
for format in bloom compact; do
  LEVELDB_BLOOM_FORMAT=$format "$host" "$@" >"$work/stock.out" 2>"$work/stock.err" ||
    fail "stock: $(cat "$work/stock.err")"
  LD_PRELOAD=$dropin LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$work/$format.stats \
    timeout 300 "$host" "$@" >"$work/$format.out" 2>"$work/$format.err" ||
    fail "$format: exited $?: $(cat "$work/$format.err")"
  cmp -s "$work/stock.out" "$work/$format.out" ||
    fail "$format: printed other than stock: $(diff "$work/stock.out" "$work/$format.out" | head)"
  stats=$work/$format.stats
  grep -qx served=partly "$stats" && grep -qx dropin_policies=300 "$stats" &&
    grep -qx policies_served=200 "$stats" && grep -qx policies_declined=100 "$stats" &&
    [ "$(grep -c '^leveldb=the LevelDB in .*/p[0-9]*\.so: served' "$stats")" -eq 200 ] &&
    [ "$(grep -c '^declined=the LevelDB in .*/p[0-9]*\.so (its Bloom policy answers' "$stats")" -eq 100 ] ||
    fail "$format: statistics not exact for 300 LevelDBs: $(grep -v '^leveldb=\|^declined=' "$stats"); $(grep -c '^leveldb=' "$stats") served and $(grep -c '^declined=' "$stats") declined lines"
  echo "run_many ($format): as stock; 200 LevelDBs served and 100 declined, each said once"
done
