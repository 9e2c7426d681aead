# Sourced by scripts/bench and scripts/test: what every measured output records, the
# library's version, the date, and the processor (model name, family and model numbers
# from /proc/cpuinfo; no host name, path or kernel string).
#
#   stamp_line        one line saying so, for a text report
#   stamp_csv FILE    prefixes every row of FILE with cpu_name,cpu_family,cpu_model,date,version

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
date=$(date -u +%Y-%m-%d)
cpu_field() { awk -F': ' -v k="$1" '$1 ~ "^" k "[ \t]*$" { print $2; exit }' /proc/cpuinfo; }
cpu_name=$(cpu_field "model name" | tr ',' ';')
cpu_family=$(cpu_field "cpu family")
cpu_model=$(cpu_field "model")
stamp_line() {
  echo "leveldb-bloom $version, measured $date on $cpu_name (family $cpu_family, model $cpu_model)"
}
stamp_csv() {
  local tmp="$1.tmp"
  awk -v n="$cpu_name" -v f="$cpu_family" -v m="$cpu_model" -v d="$date" -v v="$version" \
    'NR == 1 { print "cpu_name,cpu_family,cpu_model,date,version," $0; next }
     { print n "," f "," m "," d "," v "," $0 }' "$1" > "$tmp"
  mv "$tmp" "$1"
}
