// Small shared helpers for the C++ test suites (header-only).
//
// Every suite compares the Rust library (through its C API) with the real
// LevelDB library linked into the same test binary; nothing here encodes an
// expected result.
#ifndef LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_
#define LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <leveldb/filter_policy.h>

#include <memory>
#include <typeinfo>

#include "leveldb_bloom.h"

namespace harness {

// Where LevelDB is linked from, for expect_leveldb_is_the_oracle.
enum class LevelDBLink { kSharedLibrary, kStaticArchive };

// The oracle must be LevelDB's own Bloom policy: a definition of
// leveldb::NewBloomFilterPolicy linked ahead of LevelDB (say, an interposer in
// the Rust library) would replace it for C and C++ callers alike and make every
// comparison Rust against Rust.
inline void expect_leveldb_is_the_oracle(LevelDBLink link) {
  std::unique_ptr<const leveldb::FilterPolicy> p(leveldb::NewBloomFilterPolicy(10));
  EXPECT_STREQ(typeid(*p).name(), "N7leveldb12_GLOBAL__N_117BloomFilterPolicyE");
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&leveldb::NewBloomFilterPolicy), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  const std::string where = info.dli_fname;
  EXPECT_EQ(where.find("leveldb_bloom"), std::string::npos) << where;
  // Linked from the static archive, the definition is in the executable itself.
  const bool in_shared_leveldb = where.find("libleveldb.so") != std::string::npos;
  EXPECT_EQ(in_shared_leveldb, link == LevelDBLink::kSharedLibrary) << where;
}

// Parses an unsigned integer (decimal, or hex with 0x) from the environment
// variable `name`; returns `dflt` if it is unset or empty. A malformed value
// aborts the test binary: silently ignoring it would hide a typo.
inline uint64_t env_count(const char* name, uint64_t dflt) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return dflt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 0);
  if (end == s || *end != '\0' || *s == '-') {
    std::fprintf(stderr, "harness: %s=%s is not an unsigned integer\n", name, s);
    std::abort();
  }
  return static_cast<uint64_t>(v);
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

// A key of 0..max_len arbitrary bytes (NUL and bytes >= 0x80 included).
// A quarter of the keys are at most 8 bytes long, so that every length of the
// hash's 1-3 byte tail and the empty key come up often.
inline std::string random_key(std::mt19937_64& rng, size_t max_len) {
  size_t len_max = max_len;
  if (rng() % 4 == 0 && len_max > 8) len_max = 8;
  const size_t len = static_cast<size_t>(rng() % (static_cast<uint64_t>(len_max) + 1));
  std::string key(len, '\0');
  uint64_t bits = 0;
  for (size_t i = 0; i < len; i++) {
    if (i % 8 == 0) bits = rng();
    key[i] = static_cast<char>(static_cast<unsigned char>(bits & 0xff));
    bits >>= 8;
  }
  return key;
}

inline std::string to_hex(const std::string& s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

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

// Unique ownership of a leveldb_bloom_policy*.
struct RustPolicy {
  explicit RustPolicy(int bits_per_key) : p(leveldb_bloom_policy_create(bits_per_key)) {}
  ~RustPolicy() { leveldb_bloom_policy_destroy(p); }
  RustPolicy(const RustPolicy&) = delete;
  RustPolicy& operator=(const RustPolicy&) = delete;
  RustPolicy(RustPolicy&& o) noexcept : p(o.p) { o.p = nullptr; }
  RustPolicy& operator=(RustPolicy&& o) noexcept {
    if (this != &o) {
      leveldb_bloom_policy_destroy(p);
      p = o.p;
      o.p = nullptr;
    }
    return *this;
  }
  leveldb_bloom_policy* get() const { return p; }
  // Gives up ownership (e.g. to LevelDB's leveldb_filterpolicy_create wrapper).
  leveldb_bloom_policy* release() {
    leveldb_bloom_policy* r = p;
    p = nullptr;
    return r;
  }

  leveldb_bloom_policy* p;
};

}  // namespace harness

#endif  // LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_
