// Sizes at the edges of the format, compared with real LevelDB: the largest bits per key
// (INT_MAX: a 256 MiB filter for one key), and queries on filters of 2^32 bits and more,
// where a probe position is the 32-bit hash itself.
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "leveldb_bloom.h"

namespace {

TEST(HugeOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

// bits_per_key INT_MAX: k = 30, and one key makes a filter of 2^31 - 1 bits (LevelDB's
// n * bits_per_key is still a valid int for n = 1).
TEST(Huge, MaxBitsPerKeyFilterEqualsLevelDB) {
  std::unique_ptr<const leveldb::FilterPolicy> ldb(leveldb::NewBloomFilterPolicy(INT_MAX));
  harness::RustPolicy rust(INT_MAX);
  ASSERT_NE(rust.get(), nullptr);
  for (const std::string& key : {std::string("hello"), std::string(), std::string("\xff\x80\x01", 3)}) {
    const leveldb::Slice slice(key);
    std::string expected;
    ldb->CreateFilter(&slice, 1, &expected);
    ASSERT_EQ(leveldb_bloom_filter_len(rust.get(), 1), expected.size());
    const std::string ours = harness::rust_create_filter(rust.get(), {key});
    ASSERT_EQ(ours.size(), expected.size());
    EXPECT_TRUE(ours == expected) << "filters of " << expected.size() << " bytes differ";
    std::printf("huge_test: bits_per_key INT_MAX, key %s: %zu-byte filters identical\n",
                harness::to_hex(key).c_str(), expected.size());
    EXPECT_TRUE(leveldb_bloom_key_may_match(rust.get(), key.data(), key.size(),
                                            reinterpret_cast<const uint8_t*>(ours.data()),
                                            ours.size()));
  }
  // Two keys would be 2^32 - 2 bits: past int in LevelDB (undefined there); the size is
  // still computed exactly here.
  EXPECT_EQ(leveldb_bloom_filter_len(rust.get(), 2), (2ull * INT_MAX + 7) / 8 + 1);
}

// Filters whose bit arrays span 2^32 - 8, 2^32 and 2^32 + 8 bits, with random contents and
// each probe count: every answer equals LevelDB's KeyMayMatch.
TEST(Huge, QueriesOnFiltersOfFourGigabitsEqualLevelDB) {
  std::unique_ptr<const leveldb::FilterPolicy> ldb(leveldb::NewBloomFilterPolicy(10));
  harness::RustPolicy rust(10);
  std::mt19937_64 rng(harness::seed() ^ 0x4747ull);
  const uint64_t queries = harness::env_count("LEVELDB_BLOOM_HUGE_QUERIES", 20000);
  uint64_t compared = 0, no_match = 0;
  for (size_t array_bytes : {(size_t(1) << 29) - 1, size_t(1) << 29, (size_t(1) << 29) + 1}) {
    const size_t len = array_bytes + 1;
    std::unique_ptr<uint8_t[]> filter(new uint8_t[len]);
    // Mostly set bits, so that several probes run before a clear one ends a query.
    for (size_t i = 0; i < array_bytes; i += 8) {
      const uint64_t w = rng() | rng();
      std::memcpy(filter.get() + i, &w, std::min<size_t>(8, array_bytes - i));
    }
    for (int k : {1, 6, 30}) {
      filter[len - 1] = static_cast<uint8_t>(k);
      const leveldb::Slice f(reinterpret_cast<const char*>(filter.get()), len);
      for (uint64_t i = 0; i < queries; i++) {
        const std::string key = harness::random_key(rng, 24);
        const bool want = ldb->KeyMayMatch(key, f);
        const bool got = leveldb_bloom_key_may_match(rust.get(), key.data(), key.size(),
                                                     filter.get(), len);
        const bool cb = leveldb_bloom_cb_key_may_match(rust.get(), key.data(), key.size(),
                                                       f.data(), len) != 0;
        compared++;
        no_match += !want;
        if (got != want || cb != want) {
          ADD_FAILURE() << "filter of " << array_bytes << "+1 bytes, k " << k << ", key "
                        << harness::to_hex(key) << ": LevelDB " << want << ", ours " << got
                        << ", callback " << cb;
          return;
        }
      }
    }
  }
  std::printf("huge_test: %llu queries on filters of 2^32-8, 2^32 and 2^32+8 bits equal LevelDB's"
              " (%llu answered no)\n",
              static_cast<unsigned long long>(compared), static_cast<unsigned long long>(no_match));
  EXPECT_GT(no_match, 0u);
}

}  // namespace
