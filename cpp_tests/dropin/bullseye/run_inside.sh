#!/bin/bash
# Inside the Debian 11 root scripts/bullseye makes (this tree at /src): builds the drop-in with
# the Rust toolchain bound in, the proof programs with Debian 11's GCC against its LevelDB
# 1.22, and runs the proofs (scripts/bullseye says which).
set -euo pipefail
cd /src
export CARGO_TARGET_DIR=/src/target/bullseye/target CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
  CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
echo "== bullseye: $(ldd --version | head -1); $(g++ --version | head -1)"
cargo build -q --offline --release -p leveldb-bloom-dropin
rel=$CARGO_TARGET_DIR/release
work=/src/target/bullseye/work
rm -rf "$work"
mkdir -p "$work"
lib=/usr/lib/$(gcc -print-multiarch)
dropin=cpp_tests/dropin
failed=0

# The C and the C++ program: stock, linked ahead of libleveldb.so, static ahead of libleveldb.a.
static_libs=("$lib/libleveldb.a" -lsnappy -lstdc++ -lpthread -ldl -lm)
for lang in c cxx; do
  if [ "$lang" = c ]; then
    src=$dropin/dropin_c_program.c compile=(gcc -std=c99 -O2) cross=ON
  else
    src=$dropin/dropin_cxx_program.cc compile=(g++ -std=c++11 -O2) cross=OFF
  fi
  "${compile[@]}" "$src" -o "$work/${lang}_stock" -lleveldb
  "${compile[@]}" "$src" -o "$work/${lang}_shared" -Wl,--no-as-needed "-L$rel" \
    -lleveldb_bloom_dropin -Wl,--as-needed -lleveldb "-Wl,-rpath,$rel"
  "${compile[@]}" "$src" -o "$work/${lang}_static" -Wl,-u,_ZN7leveldb20NewBloomFilterPolicyEi \
    -Wl,-u,leveldb_filterpolicy_create "$rel/libleveldb_bloom_dropin.a" "${static_libs[@]}"
  cmake "-DPROGRAM=bullseye_$lang" "-DSTOCK=$work/${lang}_stock" "-DSHARED=$work/${lang}_shared" \
    "-DSTATIC=$work/${lang}_static" -DCOMPACT=ON "-DCROSS_READ=$cross" \
    "-DDROPIN_SO=$rel/libleveldb_bloom_dropin.so" "-DWORK_DIR=$work" \
    -P $dropin/run_dropin_proof.cmake || failed=$((failed + 1))
done

# LevelDB loaded with dlopen, and forked while another thread makes policies.
gcc -std=c11 -O2 $dropin/local_leveldb.c -o "$work/local_leveldb" -ldl -lpthread
for format in bloom compact; do
  if LD_PRELOAD=$rel/libleveldb_bloom_dropin.so LEVELDB_BLOOM_FORMAT=$format \
       LEVELDB_BLOOM_STATS_FILE=$work/local_$format.stats \
       timeout 600 "$work/local_leveldb" "$lib/libleveldb.so.1d" "$work/local_$format" 200 &&
     grep -qx served=yes "$work/local_$format.stats" &&
     grep -q '^leveldb=the LevelDB in .*libleveldb.so.1d: served' "$work/local_$format.stats"; then
    echo "bullseye: LevelDB loaded with dlopen ($format): served; 200 forks beside a thread making policies, none hung"
  else
    echo "bullseye: FAILED: LevelDB loaded with dlopen ($format): $(cat "$work/local_$format.stats" 2>&1)" >&2
    failed=$((failed + 1))
  fi
done

# Policies made in a signal handler on small alternate stacks, and the other hostile programs'
# modes that touch what older glibc does differently (fork, an initializer, the environment).
g++ -std=c++17 -O2 $dropin/hostile/hostile.cc -o "$work/hostile" -lleveldb -lpthread -ldl -rdynamic
gcc -O2 -shared -fPIC $dropin/hostile/hostile_init_plugin.c -o "$work/hostile_init_plugin.so" -ldl
for case in alt_stack_8k:hostile:alt-stack-8k:served alt_stack_16k:hostile:alt-stack-16k:served \
            fork:hostile:fork:served setenv:hostile:setenv:served; do
  sh $dropin/hostile/run_hostile.sh "$rel/libleveldb_bloom_dropin.so" "$work/hostile_${case%%:*}" \
    "$work" none "$work/hostile_init_plugin.so" "$case" || failed=$((failed + 1))
done

[ "$failed" -eq 0 ] || { echo "bullseye: $failed check(s) FAILED" >&2; exit 1; }
echo "bullseye: the drop-in serves Debian 11's LevelDB 1.22, preloaded, linked and static"
