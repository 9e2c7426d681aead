#!/bin/sh
# Runs hostile.cc's programs stock and with the drop-in preloaded, in both formats, and
# passes only if every run exits as stock's does, prints what stock's prints (the filter and
# table digests may differ only where the drop-in wrote compact filters), and leaves
# statistics that say the drop-in served.
#
#   run_hostile.sh DROPIN_SO WORK_DIR BIN_DIR WRAPPER_PLUGIN INIT_PLUGIN [NAME:PROGRAM:MODE:EXPECT]
#
# With a case named, only that one runs (the bundled LevelDBs' builds name theirs).
set -u
dropin=$1 work=$2 bin=$3 wrapper=$4 init=$5
only=${6:-}
rm -rf "$work"
mkdir -p "$work"
failures=0 runs=0
fail() { echo "FAILED: $*" >&2; failures=$((failures + 1)); }

# check NAME PROGRAM MODE EXPECT [PLUGIN]
#   EXPECT: served, or served-or-declined (what the statistics must say).
check() {
  name=$1 program=$bin/$2 mode=$3 expect=$4 plugin=${5:-}
  dir=$work/$name
  mkdir -p "$dir"
  "$program" "$mode" "$dir/stock" $plugin >"$dir/stock.out" 2>"$dir/stock.err"
  stock_rc=$?
  [ "$mode" = closed-fds ] && cp "$dir/stock/result" "$dir/stock.out"
  [ "$stock_rc" -eq 0 ] || fail "$name: the stock run exited $stock_rc: $(cat "$dir/stock.err")"
  for format in bloom compact; do
    runs=$((runs + 1))
    run=$dir/$format
    LD_PRELOAD=$dropin LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$run.stats \
      timeout 300 "$program" "$mode" "$run" $plugin >"$run.out" 2>"$run.err"
    rc=$?
    [ "$mode" = closed-fds ] && cp "$run/result" "$run.out"
    [ "$rc" -eq "$stock_rc" ] || { fail "$name ($format): exited $rc, stock $stock_rc: $(cat "$run.err")"; continue; }
    served=$(sed -n 's/^served=//p' "$run.stats" 2>/dev/null)
    case $expect in
      served) [ "$served" = yes ] || fail "$name ($format): statistics say served=$served, not yes" ;;
      served-or-declined) [ "$served" = yes ] || [ "$served" = declined ] || [ "$served" = partly ] ||
          fail "$name ($format): statistics say served=$served" ;;
    esac
    # What stock printed, but digests of what the drop-in wrote as compact filters.
    if [ "$format" = compact ] && [ "$served" != declined ]; then
      grep -v digest "$dir/stock.out" >"$dir/stock.cmp"
      grep -v digest "$run.out" >"$run.cmp"
    else
      cp "$dir/stock.out" "$dir/stock.cmp"
      cp "$run.out" "$run.cmp"
    fi
    cmp -s "$dir/stock.cmp" "$run.cmp" ||
      fail "$name ($format): printed other than stock:
$(diff "$dir/stock.out" "$run.out")"
    if grep -q 'ThreadSanitizer' "$run.err"; then
      fail "$name ($format): ThreadSanitizer reported: $(head -40 "$run.err")"
    fi
    echo "$name ($format): as stock, served=$served"
  done
}

if [ -n "$only" ]; then
  IFS=: read -r name program mode expect <<EOF_CASE
$only
EOF_CASE
  check "$name" "$program" "$mode" "$expect"
  echo "run_hostile: $runs runs, $failures failed"
  [ "$failures" -eq 0 ]
  exit
fi

check direct hostile direct served
check direct_static_libstdcxx hostile_static_libstdcxx direct served
check direct_mixed_abi hostile_mixed_abi direct served
check wrapper_plugin hostile wrapper served-or-declined "$wrapper"
check compiled_in_static_libstdcxx hostile_compiled_in_dropin db served
check fork hostile fork served
check dlopen_initializer hostile dlopen-init served "$init"
check setenv hostile setenv served
check closed_fds hostile_static_libstdcxx closed-fds served
check small_stack hostile small-stack served
check alt_stack_8k hostile alt-stack-8k served
check alt_stack_16k hostile alt-stack-16k served
check wide_bits hostile wide served
# Compact filters asked for at 40 bits per key, which they do not take: Bloom filters, stock's
# bit for bit, and the statistics say so.
{ grep -qx format=bloom "$work/wide_bits/compact.stats" &&
    cmp -s "$work/wide_bits/stock.out" "$work/wide_bits/compact.out"; } ||
  fail "wide_bits (compact): not stock's Bloom filters said as such: $(cat "$work/wide_bits/compact.stats")"
check tsan_db hostile_tsan db served
check tsan_setenv hostile_tsan setenv served

# The drop-in loaded by the program itself with dlopen (after LevelDB's library): served,
# its tables those of LevelDB's own policy, found the same way.
leveldb_so=$(ldd "$bin/hostile" | sed -n 's/.*libleveldb[^ ]* => \([^ ]*\) .*/\1/p')
mkdir -p "$work/dlopen_dropin"
"$bin/hostile" db-dlopen "$work/dlopen_dropin/stock" "$leveldb_so" >"$work/dlopen_dropin/stock.out" ||
  fail "db-dlopen of LevelDB's library failed"
runs=$((runs + 1))
LEVELDB_BLOOM_STATS_FILE=$work/dlopen_dropin/stats "$bin/hostile" db-dlopen \
  "$work/dlopen_dropin/dropin" "$dropin" >"$work/dlopen_dropin/dropin.out" 2>"$work/dlopen_dropin/err" ||
  fail "db-dlopen of the drop-in: $(cat "$work/dlopen_dropin/dropin.out" "$work/dlopen_dropin/err")"
cmp -s "$work/dlopen_dropin/stock.out" "$work/dlopen_dropin/dropin.out" ||
  fail "db-dlopen of the drop-in printed other than stock: $(diff "$work/dlopen_dropin/stock.out" "$work/dlopen_dropin/dropin.out")"
grep -qx served=yes "$work/dlopen_dropin/stats" ||
  fail "db-dlopen of the drop-in: not served: $(cat "$work/dlopen_dropin/stats")"
echo "the drop-in loaded with dlopen: as stock, served"

# The compiled-in program's stock run is its stock build (no drop-in linked).
"$bin/hostile_compiled_in" db "$work/compiled_in_stock" >"$work/compiled_in_stock.out" ||
  fail "the compiled-in stock build failed"
grep -v digest "$work/compiled_in_stock.out" >"$work/a.cmp"
grep -v digest "$work/compiled_in_static_libstdcxx/stock.out" >"$work/b.cmp"
cmp -s "$work/a.cmp" "$work/b.cmp" || fail "the compiled-in program printed other than its stock build"

# A program that is done within a millisecond, under timeout and sh -c: its own statistics,
# never its wrapper's.
for i in 1 2 3 4 5 6 7 8 9 10; do
  runs=$((runs + 2))
  LD_PRELOAD=$dropin LEVELDB_BLOOM_STATS_FILE=$work/quick-timeout.stats \
    timeout 60 "$bin/hostile" quick "$work/quick" >/dev/null
  grep -qx served=yes "$work/quick-timeout.stats" ||
    fail "quick under timeout (run $i): $(cat "$work/quick-timeout.stats")"
  LD_PRELOAD=$dropin LEVELDB_BLOOM_STATS_FILE=$work/quick-sh.stats \
    sh -c "'$bin/hostile' quick '$work/quick' >/dev/null; true"
  grep -qx served=yes "$work/quick-sh.stats" ||
    fail "quick under sh -c (run $i): $(cat "$work/quick-sh.stats")"
done
echo "quick programs under timeout and sh -c: their own statistics, 10 runs each"

echo "run_hostile: $runs runs, $failures failed"
[ "$failures" -eq 0 ]
