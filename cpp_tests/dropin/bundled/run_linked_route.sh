#!/bin/sh
# A program with the static drop-in linked into an object that holds a LevelDB without its C
# API, against the same program built without the drop-in, in both formats: the same output,
# Bloom tables byte-identical to stock's, and every LevelDB said served as BLOOM_WRITER (or,
# in the compact format, COMPACT_WRITER) says. PRELOAD (or "-") is preloaded into both runs:
# another LevelDB in the global scope, whose definitions must not be taken for this one's;
# "+PATH" preloads PATH into the drop-in's run alone (another copy of the drop-in).
#
#   run_linked_route.sh WORK_DIR BLOOM_WRITER COMPACT_WRITER PRELOAD STOCK DROPIN [ARG...]
#   (each ARG with {db} replaced by the run's database folder)
set -u
work=$1 bloom_writer=$2 compact_writer=$3 preload=$4 stock=$5 dropin=$6
shift 6
[ "$preload" = - ] && preload=
stock_preload=$preload
case $preload in +*) preload=${preload#+} stock_preload= ;; esac
rm -rf "$work"
fail() { echo "run_linked_route: FAILED ($(basename "$dropin")): $*" >&2; exit 1; }
# run PROGRAM FORMAT SIDE ARG...: the program on the side's database folder.
run() {
  program=$1 format=$2 side=$3
  shift 3
  db=$work/$format/$side
  mkdir -p "$db"
  for a in "$@"; do
    set -- "$@" "$(printf '%s' "$a" | sed "s|{db}|$db|g")"
    shift
  done
  with=$preload
  [ "$side" = stock ] && with=$stock_preload
  LD_PRELOAD=$with LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$work/$format/$side.stats \
    timeout 300 "$program" "$@" >"$work/$format/$side.out" 2>"$work/$format/$side.err" ||
    fail "$format, $side: exited $?: $(cat "$work/$format/$side.err")"
}
for format in bloom compact; do
  run "$stock" "$format" stock "$@"
  run "$dropin" "$format" dropin "$@"
  cmp -s "$work/$format/stock.out" "$work/$format/dropin.out" ||
    fail "$format: printed other than stock: $(diff "$work/$format/stock.out" "$work/$format/dropin.out" | head)"
  stats=$work/$format/dropin.stats
  grep -qx served=yes "$stats" || fail "$format: not every policy served: $(cat "$stats")"
  grep -qx "policies_refused=0" "$stats" || fail "$format: a policy refused: $(cat "$stats")"
  writer=$bloom_writer
  [ "$format" = compact ] && writer=$compact_writer
  served=$(grep -c '^leveldb=' "$stats")
  written=$(grep -c "^leveldb=.*: served, $writer" "$stats")
  [ "$served" -gt 0 ] && [ "$served" -eq "$written" ] ||
    fail "$format: every LevelDB served with \"$writer\": $(cat "$stats")"
  if [ "$format" = bloom ]; then
    for t in $(cd "$work/bloom/stock" && find . -name '*.ldb'); do
      cmp -s "$work/bloom/stock/$t" "$work/bloom/dropin/$t" || fail "bloom: $t differs from stock's"
    done
  fi
done
echo "run_linked_route ($(basename "$dropin")): as stock in both formats; $(grep '^leveldb=' "$stats" | sort -u | tr '\n' ' ')"
