#!/bin/sh
# seccomp_program confined to the system calls it makes without the drop-in (strace's list),
# with the drop-in preloaded in both formats and statistics asked for: killed (kill) or denied
# (errno) at the first call stock does not make, it must run as stock runs, and leave a
# statistics file that names its own process.
#
#   run_seccomp.sh DROPIN_SO PROGRAM WORK_DIR
set -u
dropin=$1 program=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "run_seccomp: FAILED: $*" >&2; exit 1; }
strace -f -qq -c -o "$work/trace" "$program" - none "$work/traced" >"$work/stock.out" 2>/dev/null ||
  fail "the traced stock run failed"
# strace's summary: one line per call, its name last; the header and total lines left out.
# And the calls that end a thread or the process, which never return to be counted.
{
  awk 'NF >= 5 && $NF ~ /^[a-z_0-9]+$/ && $NF != "syscall" && $NF != "total" { print $NF }' \
    "$work/trace"
  echo exit
  echo exit_group
} > "$work/allowlist"
[ -s "$work/allowlist" ] || fail "no call in strace's list: $(cat "$work/trace")"
for mode in kill errno; do
  "$program" "$work/allowlist" "$mode" "$work/stock_$mode" >"$work/stock_$mode.out" 2>"$work/stock_$mode.err" ||
    fail "stock confined ($mode): exited $?: $(cat "$work/stock_$mode.err")"
  for format in bloom compact; do
    run=$work/${mode}_$format
    LD_PRELOAD=$dropin LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$run.stats \
      "$program" "$work/allowlist" "$mode" "$run.db" >"$run.out" 2>"$run.err" &
    pid=$!
    wait $pid
    rc=$?
    [ "$rc" -eq 0 ] || fail "$mode, $format: exited $rc: $(cat "$run.err")"
    cmp -s "$work/stock.out" "$run.out" || fail "$mode, $format: printed other than stock"
    grep -qx served=yes "$run.stats" && grep -qx "pid=$pid" "$run.stats" ||
      fail "$mode, $format: statistics do not say the program served, as process $pid: $(cat "$run.stats" 2>&1)"
    echo "run_seccomp ($mode, $format): as stock, confined to $(wc -l < "$work/allowlist") calls; its statistics written"
  done
done
