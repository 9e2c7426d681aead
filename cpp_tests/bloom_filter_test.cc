// Filter bytes: the Rust library builds exactly the filters LevelDB builds.
//
// Randomized key sets (seed: env LEVELDB_BLOOM_SEED; count: env
// LEVELDB_BLOOM_FILTERS) for bits_per_key 0..=64, 100 and 1000, compared byte
// for byte with leveldb::NewBloomFilterPolicy(bpk)->CreateFilter in the same
// process, through every way the C API produces a filter.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
TEST(BloomFilterOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

// One LevelDB policy and one Rust policy per bits_per_key value.
struct Policies {
  explicit Policies(int bpk) : bits_per_key(bpk), leveldb(leveldb::NewBloomFilterPolicy(bpk)), rust(bpk) {}
  int bits_per_key;
  std::unique_ptr<const leveldb::FilterPolicy> leveldb;
  harness::RustPolicy rust;
};

std::vector<std::unique_ptr<Policies>> MakeAllPolicies() {
  std::vector<std::unique_ptr<Policies>> all;
  for (int bpk : harness::bits_per_key_values()) {
    all.emplace_back(new Policies(bpk));
    EXPECT_NE(all.back()->rust.get(), nullptr) << "leveldb_bloom_policy_create(" << bpk << ")";
  }
  return all;
}

std::string LevelDBFilter(const leveldb::FilterPolicy& policy, const std::vector<std::string>& keys,
                          std::string dst = std::string()) {
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  policy.CreateFilter(slices.data(), static_cast<int>(slices.size()), &dst);
  return dst;
}

// Key count: skewed so that most sets are small but some reach 5,000.
size_t RandomKeyCount(std::mt19937_64& rng) {
  const uint64_t r = rng() % 100;
  if (r < 60) return rng() % 11;     // 0..10
  if (r < 85) return rng() % 101;    // 0..100
  if (r < 96) return rng() % 1001;   // 0..1000
  return rng() % 5001;               // 0..5000
}

// Keys of 0..300 bytes (mostly short; all of one length half of the time), with duplicates
// and empty keys.
std::vector<std::string> RandomKeySet(std::mt19937_64& rng, size_t n) {
  static const size_t kMaxLens[] = {0, 3, 8, 16, 32, 64, 300};
  const size_t max_len = kMaxLens[rng() % (sizeof(kMaxLens) / sizeof(kMaxLens[0]))];
  std::vector<std::string> keys = harness::random_keys(rng, n, max_len);
  for (size_t i = 0; i < n; i++) {
    const uint64_t r = rng() % 100;
    if (r < 10 && i > 0) {
      keys[i] = keys[rng() % i];  // duplicate
    } else if (r < 13) {
      keys[i].clear();  // empty key
    }
  }
  return keys;
}

// Describes the first difference between two strings, for failure messages.
std::string Diff(const std::string& expected, const std::string& actual) {
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) i++;
  const size_t from = i < 8 ? 0 : i - 8;
  std::string out = "lengths " + std::to_string(expected.size()) + " (LevelDB) vs " +
                    std::to_string(actual.size()) + " (Rust); first difference at byte " +
                    std::to_string(i) + "; LevelDB[" + std::to_string(from) + "..]=" +
                    harness::to_hex(expected.substr(from, 32)) + " Rust[" + std::to_string(from) +
                    "..]=" + harness::to_hex(actual.substr(std::min(from, actual.size()), 32));
  if (expected.size() <= 64 && actual.size() <= 64) {
    out += "\n  LevelDB: " + harness::to_hex(expected) + "\n  Rust:    " + harness::to_hex(actual);
  }
  return out;
}

struct KeyArrays {
  explicit KeyArrays(const std::vector<std::string>& keys) : ptrs(keys.size()), lens(keys.size()) {
    for (size_t i = 0; i < keys.size(); i++) {
      ptrs[i] = keys[i].data();
      lens[i] = keys[i].size();
    }
  }
  const char* const* p() const { return ptrs.empty() ? nullptr : ptrs.data(); }
  const size_t* l() const { return lens.empty() ? nullptr : lens.data(); }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
};

constexpr size_t kGuard = 16;
constexpr char kGuardByte = '\xa5';

TEST(BloomFilter, NameMatchesLevelDB) {
  std::unique_ptr<const leveldb::FilterPolicy> ldb(leveldb::NewBloomFilterPolicy(10));
  harness::RustPolicy rust(10);
  ASSERT_NE(rust.get(), nullptr);
  EXPECT_STREQ(leveldb_bloom_policy_name(rust.get()), ldb->Name());
  EXPECT_STREQ(leveldb_bloom_cb_name(rust.get()), ldb->Name());
}

TEST(BloomFilter, RandomizedFiltersMatchLevelDB) {
  const uint64_t seed = harness::seed();
  const uint64_t num_filters = harness::env_count("LEVELDB_BLOOM_FILTERS", 100000);
  std::mt19937_64 rng(seed);
  const auto policies = MakeAllPolicies();

  uint64_t filters = 0, bytes = 0, keys_total = 0, max_keys = 0, failures = 0;
  for (uint64_t iter = 0; iter < num_filters && failures < 10; iter++) {
    const Policies& p = *policies[rng() % policies.size()];
    const std::vector<std::string> keys = RandomKeySet(rng, RandomKeyCount(rng));
    const KeyArrays arr(keys);
    keys_total += keys.size();
    max_keys = std::max<uint64_t>(max_keys, keys.size());
    const std::string where = "filter #" + std::to_string(iter) + " (seed " + std::to_string(seed) +
                              "), bits_per_key " + std::to_string(p.bits_per_key) + ", " +
                              std::to_string(keys.size()) + " keys";
    const uint64_t failures_before = failures;

    // 1. Fresh buffer: leveldb_bloom_filter_len + leveldb_bloom_create_filter.
    const std::string expected = LevelDBFilter(*p.leveldb, keys);
    const size_t len = leveldb_bloom_filter_len(p.rust.get(), keys.size());
    if (len != expected.size()) {
      ADD_FAILURE() << where << ": leveldb_bloom_filter_len " << len << ", LevelDB filter "
                    << expected.size() << " bytes";
      failures++;
    }
    const std::string rust = harness::rust_create_filter(p.rust.get(), keys);
    bytes += expected.size();
    if (rust != expected) {
      ADD_FAILURE() << where << ": create_filter differs: " << Diff(expected, rust);
      failures++;
    }

    // 2. Appended after existing bytes: LevelDB appends to a non-empty dst; the
    //    Rust filter written just past the same prefix must give the same
    //    string, and not touch the spare bytes after it.
    std::string prefix = harness::random_key(rng, 64);
    const std::string expected_appended = LevelDBFilter(*p.leveldb, keys, prefix);
    std::string buf = prefix + std::string(expected.size() + kGuard, kGuardByte);
    size_t out_len = 0;
    const int status = leveldb_bloom_create_filter(
        p.rust.get(), arr.p(), arr.l(), keys.size(),
        reinterpret_cast<uint8_t*>(&buf[prefix.size()]), buf.size() - prefix.size(), &out_len);
    if (status != LEVELDB_BLOOM_OK || out_len != expected.size()) {
      ADD_FAILURE() << where << ": appended create_filter status " << status << " ("
                    << leveldb_bloom_status_message(status) << "), out_len " << out_len;
      failures++;
    } else {
      if (buf.compare(prefix.size() + out_len, kGuard, std::string(kGuard, kGuardByte)) != 0) {
        ADD_FAILURE() << where << ": bytes past *out_len were written";
        failures++;
      }
      buf.resize(prefix.size() + out_len);
      bytes += buf.size();
      if (buf != expected_appended) {
        ADD_FAILURE() << where << ": appended filter differs (prefix " << prefix.size()
                      << " bytes): " << Diff(expected_appended, buf);
        failures++;
      }
    }

    // 3. LevelDB's C callback: a malloc'd filter.
    size_t cb_len = 0;
    char* cb = leveldb_bloom_cb_create_filter(p.rust.get(), arr.p(), arr.l(),
                                              static_cast<int>(keys.size()), &cb_len);
    if (cb == nullptr) {
      ADD_FAILURE() << where << ": leveldb_bloom_cb_create_filter returned NULL";
      failures++;
    } else {
      const std::string got(cb, cb_len);
      std::free(cb);
      bytes += got.size();
      if (got != expected) {
        ADD_FAILURE() << where << ": cb_create_filter differs: " << Diff(expected, got);
        failures++;
      }
    }

    if (failures == failures_before) filters++;
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(filters, num_filters);
  std::printf(
      "bloom_filter_test: %llu key sets (%llu keys, largest %llu), each compared 3 ways "
      "(create_filter, appended after a prefix, cb_create_filter): %llu bytes compared with "
      "LevelDB, %llu mismatching key sets\n",
      static_cast<unsigned long long>(filters), static_cast<unsigned long long>(keys_total),
      static_cast<unsigned long long>(max_keys), static_cast<unsigned long long>(bytes),
      static_cast<unsigned long long>(failures));
}

// leveldb_bloom_filter_len is the length of LevelDB's filter for every key
// count 0..300 and some larger ones, for every bits_per_key value.
TEST(BloomFilter, FilterLenMatchesLevelDB) {
  const auto policies = MakeAllPolicies();
  std::vector<size_t> counts;
  for (size_t n = 0; n <= 300; n++) counts.push_back(n);
  for (size_t n : {511, 512, 513, 1000, 4095, 4096, 4097, 10000, 65537}) counts.push_back(n);

  uint64_t compared = 0;
  for (const auto& p : policies) {
    // The same key n times: only the length matters here.
    std::vector<leveldb::Slice> slices;
    for (size_t n : counts) {
      if (p->bits_per_key >= 100 && n > 10000) continue;  // keep it quick
      slices.assign(n, leveldb::Slice("k", 1));
      std::string dst;
      p->leveldb->CreateFilter(slices.data(), static_cast<int>(n), &dst);
      ASSERT_EQ(leveldb_bloom_filter_len(p->rust.get(), n), dst.size())
          << "bits_per_key " << p->bits_per_key << ", " << n << " keys";
      compared++;
    }
  }
  std::printf("bloom_filter_test: %llu (bits_per_key, key count) filter lengths compared\n",
              static_cast<unsigned long long>(compared));
}

// A too-small buffer: LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL, *out_len = the length
// of LevelDB's filter, nothing written past out_cap; then the exact size works.
TEST(BloomFilter, BufferTooSmallReportsLevelDBLength) {
  std::mt19937_64 rng(harness::seed() ^ 0x5a5a5a5a);
  const auto policies = MakeAllPolicies();
  uint64_t cases = 0;
  for (int iter = 0; iter < 2000; iter++) {
    const Policies& p = *policies[rng() % policies.size()];
    const std::vector<std::string> keys = RandomKeySet(rng, rng() % 200);
    const KeyArrays arr(keys);
    const std::string expected = LevelDBFilter(*p.leveldb, keys);
    const size_t need = expected.size();
    ASSERT_GE(need, 2u);

    const size_t caps[] = {0, 1, need / 2, need - 1, static_cast<size_t>(rng() % need)};
    for (size_t cap : caps) {
      std::string buf(cap + kGuard, kGuardByte);
      size_t out_len = 12345;
      const int status = leveldb_bloom_create_filter(p.rust.get(), arr.p(), arr.l(), keys.size(),
                                                     reinterpret_cast<uint8_t*>(&buf[0]), cap,
                                                     &out_len);
      ASSERT_EQ(status, LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL)
          << "cap " << cap << ", need " << need << ": " << leveldb_bloom_status_message(status);
      ASSERT_EQ(out_len, need) << "cap " << cap;
      ASSERT_EQ(buf.substr(cap), std::string(kGuard, kGuardByte)) << "written past out_cap " << cap;
      cases++;
    }
    // Size query with a NULL buffer.
    size_t out_len = 0;
    ASSERT_EQ(leveldb_bloom_create_filter(p.rust.get(), arr.p(), arr.l(), keys.size(), nullptr, 0,
                                          &out_len),
              LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL);
    ASSERT_EQ(out_len, need);
    cases++;
    // Exactly the needed size.
    std::string buf(need, '\0');
    ASSERT_EQ(leveldb_bloom_create_filter(p.rust.get(), arr.p(), arr.l(), keys.size(),
                                          reinterpret_cast<uint8_t*>(&buf[0]), need, &out_len),
              LEVELDB_BLOOM_OK);
    ASSERT_EQ(out_len, need);
    ASSERT_EQ(buf, expected) << Diff(expected, buf);
  }
  std::printf("bloom_filter_test: %llu too-small buffers checked\n",
              static_cast<unsigned long long>(cases));
}

// Key counts beyond one 5,000-key set: one large filter per bits_per_key in
// a spread of values, so that large bit arrays are covered too.
TEST(BloomFilter, LargeFiltersMatchLevelDB) {
  std::mt19937_64 rng(harness::seed() ^ 0x1a2b3c4d);
  uint64_t bytes = 0;
  for (int bpk : {1, 7, 10, 16, 23, 64}) {
    std::unique_ptr<const leveldb::FilterPolicy> ldb(leveldb::NewBloomFilterPolicy(bpk));
    harness::RustPolicy rust(bpk);
    ASSERT_NE(rust.get(), nullptr);
    std::vector<std::string> keys(50000 + rng() % 50000);
    for (auto& k : keys) k = harness::random_key(rng, 40);
    const std::string expected = LevelDBFilter(*ldb, keys);
    const std::string got = harness::rust_create_filter(rust.get(), keys);
    ASSERT_EQ(got, expected) << "bits_per_key " << bpk << ", " << keys.size()
                             << " keys: " << Diff(expected, got);
    bytes += expected.size();
  }
  std::printf("bloom_filter_test: 6 large filters, %llu bytes compared\n",
              static_cast<unsigned long long>(bytes));
}

}  // namespace
