// Queries: the Rust library answers KeyMayMatch exactly as LevelDB does, on
// filters built by LevelDB and by Rust, and on malformed filters.
//
// Every expected answer is LevelDB's KeyMayMatch in the same process. Seed:
// env LEVELDB_BLOOM_SEED; filter count: env LEVELDB_BLOOM_QUERY_FILTERS.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>



#include <gtest/gtest.h>
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "harness.h"
#include "leveldb_bloom.h"

namespace {

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(BloomQueryOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

struct Counts {
  uint64_t queries = 0;       // keys checked (each asked 3 ways)
  uint64_t may_match = 0;     // LevelDB said "may match"
  uint64_t no_match = 0;      // LevelDB said "no match"
  uint64_t disagreements = 0;
};

// Asks LevelDB, leveldb_bloom_key_may_match and leveldb_bloom_cb_key_may_match
// about one key; the filter is `len` bytes at `filter` (an exact-size
// allocation, so reading past it is a detectable bug).
bool Agree(const leveldb::FilterPolicy& ldb, const leveldb_bloom_policy* rust,
           const uint8_t* filter, size_t len, const std::string& key, Counts* c,
           const std::string& where) {
  const bool expected = ldb.KeyMayMatch(leveldb::Slice(key), leveldb::Slice(reinterpret_cast<const char*>(filter), len));
  const bool r1 = leveldb_bloom_key_may_match(rust, key.data(), key.size(), filter, len);
  const uint8_t r2 = leveldb_bloom_cb_key_may_match(const_cast<leveldb_bloom_policy*>(rust), key.data(), key.size(),
                                                    reinterpret_cast<const char*>(filter), len);
  c->queries++;
  (expected ? c->may_match : c->no_match)++;
  if (r1 != expected || (r2 != 0) != expected) {
    c->disagreements++;
    if (c->disagreements <= 10) {
      ADD_FAILURE() << where << ": key " << harness::to_hex(key) << ": LevelDB " << expected
                    << ", key_may_match " << r1 << ", cb_key_may_match " << int(r2)
                    << "; filter (" << len << " bytes) "
                    << harness::to_hex(std::string(reinterpret_cast<const char*>(filter), std::min<size_t>(len, 48)))
                    << (len > 48 ? "..." : "");
    }
    return false;
  }
  return true;
}

// leveldb_bloom_key_may_match_batch over `keys` agrees with LevelDB's KeyMayMatch for each.
// Counts the keys in `batched`.
void AgreeBatch(const leveldb::FilterPolicy& ldb, const leveldb_bloom_policy* rust,
                const uint8_t* filter, size_t len, const std::vector<std::string>& keys,
                uint64_t* batched, Counts* c, const std::string& where) {
  const support::KeyArrays arrays(keys);
  std::vector<uint8_t> results(keys.size(), 0x55);
  ASSERT_EQ(leveldb_bloom_key_may_match_batch(rust, arrays.ptrs.data(), arrays.lens.data(),
                                              keys.size(), filter, len, results.data()),
            LEVELDB_BLOOM_OK);
  for (size_t i = 0; i < keys.size(); i++) {
    const bool expected = ldb.KeyMayMatch(
        leveldb::Slice(keys[i]), leveldb::Slice(reinterpret_cast<const char*>(filter), len));
    (*batched)++;
    if (results[i] != static_cast<uint8_t>(expected)) {
      c->disagreements++;
      if (c->disagreements <= 10) {
        ADD_FAILURE() << where << ": batch answer " << int(results[i]) << " for key #" << i << " "
                      << harness::to_hex(keys[i]) << ", LevelDB " << expected;
      }
    }
  }
}

// A filter in an allocation of exactly its size.
struct ExactBuffer {
  explicit ExactBuffer(const std::string& s) : len(s.size()), data(new uint8_t[s.size()]) {
    if (len != 0) std::memcpy(data.get(), s.data(), len);
  }
  size_t len;
  std::unique_ptr<uint8_t[]> data;
};

size_t RandomKeyCount(std::mt19937_64& rng) {
  const uint64_t r = rng() % 100;
  if (r < 50) return rng() % 21;
  if (r < 85) return rng() % 201;
  return rng() % 2001;
}

void PrintCounts(const char* what, const Counts& c) {
  std::printf("bloom_query_test: %s: %llu keys compared 3 ways (LevelDB may-match %llu, no-match "
              "%llu), %llu disagreements\n",
              what, static_cast<unsigned long long>(c.queries),
              static_cast<unsigned long long>(c.may_match), static_cast<unsigned long long>(c.no_match),
              static_cast<unsigned long long>(c.disagreements));
}

// Filters built by LevelDB and by Rust for random key sets: every inserted key
// and 1,000 other keys per filter get the same answer from all three.
TEST(BloomQuery, WellFormedFiltersAgreeWithLevelDB) {
  const uint64_t seed = harness::seed();
  const uint64_t num_filters = harness::env_count("LEVELDB_BLOOM_QUERY_FILTERS", 3000);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const std::vector<int> bpks = harness::bits_per_key_values();
  std::vector<std::unique_ptr<const leveldb::FilterPolicy>> ldb;
  std::vector<harness::RustPolicy> rust;
  for (int b : bpks) {
    ldb.emplace_back(leveldb::NewBloomFilterPolicy(b));
    rust.emplace_back(b);
    ASSERT_NE(rust.back().get(), nullptr);
  }

  Counts inserted, absent;
  uint64_t filters = 0, batched = 0;
  for (uint64_t iter = 0; iter < num_filters && inserted.disagreements + absent.disagreements < 10; iter++) {
    const size_t pi = rng() % bpks.size();
    const size_t n = RandomKeyCount(rng);
    const size_t max_len = (rng() % 2) ? 16 : 200;
    const std::vector<std::string> keys = harness::random_keys(rng, n, max_len);
    const std::vector<std::string> others = harness::random_keys(rng, 1000, max_len);

    std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
    std::string ldb_filter;
    ldb[pi]->CreateFilter(slices.data(), static_cast<int>(n), &ldb_filter);
    const std::string rust_filter = harness::rust_create_filter(rust[pi].get(), keys);

    for (int which = 0; which < 2; which++) {
      const ExactBuffer f(which == 0 ? ldb_filter : rust_filter);
      const std::string where = std::string(which == 0 ? "LevelDB" : "Rust") + "-built filter #" +
                                std::to_string(iter) + " (seed " + std::to_string(seed) +
                                "), bits_per_key " + std::to_string(bpks[pi]) + ", " +
                                std::to_string(n) + " keys";
      for (const auto& k : keys) {
        Agree(*ldb[pi], rust[pi].get(), f.data.get(), f.len, k, &inserted, where);
      }
      for (const auto& k : others) {
        Agree(*ldb[pi], rust[pi].get(), f.data.get(), f.len, k, &absent, where);
      }
      AgreeBatch(*ldb[pi], rust[pi].get(), f.data.get(), f.len, keys, &batched, &inserted, where);
      AgreeBatch(*ldb[pi], rust[pi].get(), f.data.get(), f.len, others, &batched, &absent, where);
      filters++;
    }
  }
  PrintCounts("inserted keys", inserted);
  PrintCounts("other keys", absent);
  std::printf("bloom_query_test: %llu well-formed filters (half LevelDB-built, half Rust-built);"
              " %llu keys also compared through leveldb_bloom_key_may_match_batch\n",
              static_cast<unsigned long long>(filters), static_cast<unsigned long long>(batched));
  EXPECT_EQ(inserted.disagreements + absent.disagreements, 0u);
  // A Bloom filter never forgets an inserted key (LevelDB's answer on both filters).
  EXPECT_EQ(inserted.no_match, 0u);
  // The other keys must exercise both answers, or the comparison proves little.
  EXPECT_GT(absent.may_match, 0u);
  EXPECT_GT(absent.no_match, 0u);
}

// Malformed and unusual filters: every length 0..16 with every last byte
// (the probe count k; 0 and 31..255 are "always match", 1..30 probe a bit
// array of (len-1)*8 bits, len < 2 never matches), the other bytes random,
// all zero or all 0xff; each asked about many keys.
TEST(BloomQuery, MalformedFiltersAgreeWithLevelDB) {
  const uint64_t seed = harness::seed();
  std::mt19937_64 rng(seed ^ 0x243f6a8885a308d3ULL);
  // The policy's bits_per_key plays no part in queries; use a few.
  const int kBpks[] = {0, 10, 1000};
  const char* const kFills[] = {"random", "zero", "0xff"};

  Counts counts;
  uint64_t filters = 0, batched = 0;
  std::vector<std::string> keys;
  for (int bpk : kBpks) {
    std::unique_ptr<const leveldb::FilterPolicy> ldb(leveldb::NewBloomFilterPolicy(bpk));
    harness::RustPolicy rust(bpk);
    ASSERT_NE(rust.get(), nullptr);
    for (size_t len = 0; len <= 16; len++) {
      const int last_values = len == 0 ? 1 : 256;
      for (int last = 0; last < last_values; last++) {
        for (int fill = 0; fill < 3; fill++) {
          if (len <= 1 && fill > 0) continue;  // no other bytes to fill
          std::string s(len, '\0');
          for (size_t i = 0; i + 1 < len; i++) {
            s[i] = fill == 0 ? static_cast<char>(rng()) : fill == 1 ? '\0' : '\xff';
          }
          if (len > 0) s[len - 1] = static_cast<char>(last);
          const ExactBuffer f(s);
          const std::string where = "filter " + harness::to_hex(s) + " (" + kFills[fill] +
                                    " fill, bits_per_key " + std::to_string(bpk) + ", seed " +
                                    std::to_string(seed) + ")";
          keys = harness::random_keys(rng, 64, 12);
          keys.emplace_back();
          for (const auto& k : keys) Agree(*ldb, rust.get(), f.data.get(), f.len, k, &counts, where);
          AgreeBatch(*ldb, rust.get(), f.data.get(), f.len, keys, &batched, &counts, where);
          filters++;
          if (counts.disagreements >= 10) break;
        }
      }
    }
  }

  // Random bytes of random lengths up to 300, the last byte a valid k (1..30).
  for (int i = 0; i < 5000 && counts.disagreements < 10; i++) {
    std::string s(2 + rng() % 299, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    s.back() = static_cast<char>(1 + rng() % 30);
    const ExactBuffer f(s);
    std::unique_ptr<const leveldb::FilterPolicy> ldb(leveldb::NewBloomFilterPolicy(10));
    harness::RustPolicy rust(10);
    const std::string where = "random filter of " + std::to_string(s.size()) + " bytes, k " +
                              std::to_string(int(s.back())) + " (seed " + std::to_string(seed) + ")";
    keys = harness::random_keys(rng, 64, 40);
    for (const auto& k : keys) Agree(*ldb, rust.get(), f.data.get(), f.len, k, &counts, where);
    AgreeBatch(*ldb, rust.get(), f.data.get(), f.len, keys, &batched, &counts, where);
    filters++;
  }

  PrintCounts("malformed/random filters", counts);
  std::printf("bloom_query_test: %llu malformed/random filters; %llu keys also compared through"
              " leveldb_bloom_key_may_match_batch\n",
              static_cast<unsigned long long>(filters), static_cast<unsigned long long>(batched));
  EXPECT_EQ(counts.disagreements, 0u);
  EXPECT_GT(counts.may_match, 0u);
  EXPECT_GT(counts.no_match, 0u);
}

}  // namespace
