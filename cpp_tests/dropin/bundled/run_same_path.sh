#!/bin/sh
# A plugin reloaded under the same file name by another build whose dynamic section is at the
# same offset (same_path_plugin.cc): picks the C++11 build whose .dynamic offset is the old
# build's (fails if none is: the test would prove nothing), then runs run_reload.sh both
# ways round.
#
#   run_same_path.sh SOURCE_DIR DROPIN_SO HOST WORK_DIR OLD CXX11...
set -u
src=$1 dropin=$2 host=$3 work=$4 old=$5
shift 5
offset() { readelf -SW "$1" | awk '$2 == ".dynamic" { print $4 }'; }
want=$(offset "$old")
aligned=
for candidate in "$@"; do
  [ "$(offset "$candidate")" = "$want" ] && { aligned=$candidate; break; }
done
[ -n "$aligned" ] || { echo "run_same_path: no C++11 build has .dynamic at $want" >&2; exit 1; }
echo "run_same_path: $(basename "$aligned") and $(basename "$old") both have .dynamic at 0x$want"
sh "$src/run_reload.sh" "$dropin" "$host" "$aligned" "$old" "$work/cxx11_then_old" &&
  sh "$src/run_reload.sh" "$dropin" "$host" "$old" "$aligned" "$work/old_then_cxx11"
