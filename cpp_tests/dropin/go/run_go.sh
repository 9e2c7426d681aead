#!/bin/sh
# Builds the Go program (cgo, LevelDB's C API) and runs it stock and with the drop-in preloaded
# in both formats: the same output, and a statistics file that says it served, although Go
# ends its processes without C's atexit handlers.
#
#   run_go.sh GO SOURCE_DIR DROPIN_SO WORK_DIR
set -u
go=$1 src=$2 dropin=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "run_go: FAILED: $*" >&2; exit 1; }
export GOCACHE="$work/cache" GOPATH="$work/gopath" GOPROXY=off GOFLAGS=-mod=mod
(cd "$src" && "$go" build -o "$work/leveldbprogram" .) || fail "go build"
"$work/leveldbprogram" "$work/stock" >"$work/stock.out" || fail "the stock run"
for format in bloom compact; do
  LD_PRELOAD=$dropin LEVELDB_BLOOM_FORMAT=$format LEVELDB_BLOOM_STATS_FILE=$work/$format.stats \
    "$work/leveldbprogram" "$work/$format" >"$work/$format.out" || fail "$format: exited $?"
  cmp -s "$work/stock.out" "$work/$format.out" || fail "$format: printed other than stock"
  grep -qx served=yes "$work/$format.stats" && grep -qx policies_served=1 "$work/$format.stats" &&
    ! grep -qx queries=0 "$work/$format.stats" ||
    fail "$format: no statistics of its work: $(cat "$work/$format.stats" 2>&1)"
  echo "run_go ($format): as stock; statistics written before Go's exit"
done
