#!/bin/sh
# plugins_host over plugins that each carry the drop-in with a LevelDB of their own (linked
# ahead of a shared LevelDB of the C++11 or the old string layout, or the static drop-in and
# LevelDB compiled into the plugin), in several orders, beside a plugin without the drop-in,
# in both formats: the same output as the same plugins built without the drop-in, Bloom
# tables byte-identical to theirs, and every plugin's LevelDB named as served by its own code.
#
#   run_plugins.sh HOST WORK_DIR ORDER...   (ORDER: comma-separated plugin pairs
#                                            DROPIN_BUILD:STOCK_BUILD)
set -u
host=$1 work=$2
shift 2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "run_plugins: FAILED: $*" >&2; exit 1; }
n=0
for order in "$@"; do
  n=$((n + 1))
  dropin_plugins="" stock_plugins=""
  for pair in $(echo "$order" | tr , ' '); do
    dropin_plugins="$dropin_plugins ${pair%%:*}"
    stock_plugins="$stock_plugins ${pair##*:}"
  done
  for format in bloom compact; do
    run=$work/$n-$format
    mkdir -p "$run/stock" "$run/dropin"
    # shellcheck disable=SC2086
    LEVELDB_BLOOM_FORMAT=$format timeout 300 "$host" "$run/stock" $stock_plugins \
      >"$run/stock.out" 2>"$run/stock.err" || fail "$order: stock: $(cat "$run/stock.err")"
    # shellcheck disable=SC2086
    LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$run/stats \
      timeout 300 "$host" "$run/dropin" $dropin_plugins >"$run/dropin.out" 2>"$run/dropin.err" ||
      fail "$order ($format): exited $?: $(cat "$run/dropin.err")"
    cmp -s "$run/stock.out" "$run/dropin.out" ||
      fail "$order ($format): printed other than stock: $(diff "$run/stock.out" "$run/dropin.out" | head)"
    grep -qx served=yes "$run/stats" ||
      fail "$order ($format): not every policy served: $(cat "$run/stats")"
    for plugin in $dropin_plugins; do
      case $plugin in
        *stock*) continue ;;
        *static*) leveldb=$(basename "$plugin") ;;
        *old*) leveldb=libleveldb-bundled-old.so ;;
        *) leveldb=libleveldb-bundled-cxx11.so ;;
      esac
      grep -q "^leveldb=the LevelDB in .*$leveldb: served, its C API writes" "$run/stats" ||
        fail "$order ($format): $(basename "$plugin")'s LevelDB ($leveldb) not said served by its C API: $(cat "$run/stats")"
    done
    if [ "$format" = bloom ]; then
      for t in "$run"/stock/db*/*.ldb; do
        [ -e "$t" ] || continue
        rel=${t#"$run/stock/"}
        cmp -s "$t" "$run/dropin/$rel" || fail "$order (bloom): $rel differs from stock's"
      done
    fi
  done
  echo "run_plugins ($order): as stock in both formats, each plugin's LevelDB served by its own C API"
done
