// The GoogleTest face of the test-support library (support.h) for the C++ test suites:
// its checks reported as gtest failures.
//
// Every suite compares the Rust library (through its C API) with the real
// LevelDB library linked into the same test binary; nothing here encodes an
// expected result.
#ifndef LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_
#define LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "leveldb_bloom.h"
#include "support.h"

namespace harness {

using support::env_count;
using support::LevelDBLink;
using support::random_key;
using support::RustPolicy;

// The oracle must be LevelDB's own Bloom policy (support::oracle_problem says why).
inline void expect_leveldb_is_the_oracle(LevelDBLink link) {
  EXPECT_EQ(support::oracle_problem(link), "");
}

// The random seed of this run: env LEVELDB_BLOOM_SEED, or a fixed default.
// Printed once per process so that any failure can be reproduced.
inline uint64_t seed() {
  static const uint64_t s = [] {
    const uint64_t v = env_count("LEVELDB_BLOOM_SEED", 20250123);
    std::fprintf(stderr, "harness: LEVELDB_BLOOM_SEED=%llu\n",
                 static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

inline std::string to_hex(const std::string& s) { return support::hex(s); }

// Builds a filter with the Rust library (leveldb_bloom_filter_len +
// leveldb_bloom_create_filter). A failing status is reported as a gtest
// failure and yields an empty string.
inline std::string rust_create_filter(const leveldb_bloom_policy* policy,
                                      const std::vector<std::string>& keys) {
  std::vector<const char*> ptrs(keys.size());
  std::vector<size_t> lens(keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    ptrs[i] = keys[i].data();
    lens[i] = keys[i].size();
  }
  const size_t need = leveldb_bloom_filter_len(policy, keys.size());
  EXPECT_NE(need, 0u) << "leveldb_bloom_filter_len(" << keys.size() << ")";
  // One spare byte; a NULL pointer is never passed for an empty array.
  std::string out(need + 1, '\0');
  size_t out_len = 0;
  const int status = leveldb_bloom_create_filter(
      policy, ptrs.empty() ? nullptr : ptrs.data(), lens.empty() ? nullptr : lens.data(),
      keys.size(), reinterpret_cast<uint8_t*>(&out[0]), need, &out_len);
  EXPECT_EQ(status, LEVELDB_BLOOM_OK)
      << "leveldb_bloom_create_filter: " << leveldb_bloom_status_message(status);
  if (status != LEVELDB_BLOOM_OK) return std::string();
  EXPECT_EQ(out_len, need);
  out.resize(out_len <= need ? out_len : need);
  return out;
}

}  // namespace harness

#endif  // LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_
