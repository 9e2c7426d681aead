#!/bin/sh
# reload_host stock and with the drop-in preloaded, in both formats: the same output as stock,
# the second plugin's tables (if it writes any) byte-identical to stock's in the Bloom format,
# and both plugins' LevelDBs served, each by its own code.
#
#   run_reload.sh DROPIN_SO HOST PLUGIN_A PLUGIN_B WORK_DIR
set -u
dropin=$1 host=$2 a=$3 b=$4 work=$5
rm -rf "$work"
mkdir -p "$work"
fail() { echo "run_reload: FAILED: $*" >&2; exit 1; }
for format in bloom compact; do
  # Stock, with the same environment (which stock LevelDB ignores).
  rm -rf "$work/stock" "$work/stock.first"
  LEVELDB_BLOOM_FORMAT=$format "$host" "$a" "$b" "$work/stock" >"$work/stock.out" 2>"$work/stock.err" ||
    fail "stock: $(cat "$work/stock.err")"
  LD_PRELOAD=$dropin LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$work/$format.stats \
    timeout 300 "$host" "$a" "$b" "$work/$format" >"$work/$format.out" 2>"$work/$format.err" ||
    fail "$format: exited $?: $(cat "$work/$format.err")"
  cmp -s "$work/stock.out" "$work/$format.out" ||
    fail "$format: printed other than stock: $(diff "$work/stock.out" "$work/$format.out")"
  # Both plugins' policies served (each loaded in turn under one name, bloom.plugin.so).
  served=$(sed -n 's/^policies_served=//p' "$work/$format.stats")
  grep -qx served=yes "$work/$format.stats" && [ "${served:-0}" -ge 2 ] &&
    grep -q "^leveldb=the LevelDB in .*plugin.so: served" "$work/$format.stats" ||
    fail "$format: not both LevelDBs served: $(cat "$work/$format.stats")"
  if [ "$format" = bloom ]; then
    for t in "$work"/stock/*.ldb; do
      [ -e "$t" ] || continue
      cmp -s "$t" "$work/bloom/$(basename "$t")" || fail "bloom: $(basename "$t") differs from stock's"
    done
  fi
  echo "run_reload ($format): as stock, both LevelDBs served; $(grep reload_host "$work/$format.err")"
done
