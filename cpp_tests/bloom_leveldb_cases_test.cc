// LevelDB 1.23's own util/bloom_test.cc cases (Empty, Small, VaryingLengths),
// run with the same logic against LevelDB's policy and against the Rust
// policy; then the Rust results are compared with LevelDB's, filter by filter.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>



#include <gtest/gtest.h>
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "harness.h"
#include "leveldb_bloom.h"

namespace {

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(BloomCasesOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

// LevelDB's Key(i): the little-endian fixed32 encoding of i.
std::string Key(int i) {
  const uint32_t v = static_cast<uint32_t>(i);
  std::string s(4, '\0');
  for (int b = 0; b < 4; b++) s[b] = static_cast<char>((v >> (8 * b)) & 0xff);
  return s;
}

int NextLength(int length) {
  if (length < 10) {
    length += 1;
  } else if (length < 100) {
    length += 10;
  } else if (length < 1000) {
    length += 100;
  } else {
    length += 1000;
  }
  return length;
}

// LevelDB's BloomTest fixture, over either implementation.
class BloomImpl {
 public:
  virtual ~BloomImpl() = default;
  virtual const char* name() const = 0;

  void Reset() {
    keys_.clear();
    filter_.clear();
  }
  void Add(const std::string& s) { keys_.push_back(s); }
  void Build() {
    filter_ = CreateFilter(keys_);
    keys_.clear();
  }
  size_t FilterSize() const { return filter_.size(); }
  const std::string& filter() const { return filter_; }
  bool Matches(const std::string& s) {
    if (!keys_.empty()) Build();
    return KeyMayMatch(s, filter_);
  }
  // LevelDB returns the rate; the count of the 10,000 probes is kept too.
  int FalsePositives() {
    int result = 0;
    for (int i = 0; i < 10000; i++) {
      if (Matches(Key(i + 1000000000))) result++;
    }
    return result;
  }

 protected:
  virtual std::string CreateFilter(const std::vector<std::string>& keys) = 0;
  virtual bool KeyMayMatch(const std::string& key, const std::string& filter) = 0;

 private:
  std::vector<std::string> keys_;
  std::string filter_;
};

class LevelDBBloom : public BloomImpl {
 public:
  LevelDBBloom() : policy_(leveldb::NewBloomFilterPolicy(10)) {}
  const char* name() const override { return "LevelDB"; }

 protected:
  std::string CreateFilter(const std::vector<std::string>& keys) override {
    std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
    std::string dst;
    policy_->CreateFilter(slices.data(), static_cast<int>(slices.size()), &dst);
    return dst;
  }
  bool KeyMayMatch(const std::string& key, const std::string& filter) override {
    return policy_->KeyMayMatch(key, filter);
  }

 private:
  std::unique_ptr<const leveldb::FilterPolicy> policy_;
};

class RustBloom : public BloomImpl {
 public:
  RustBloom() : policy_(10) { EXPECT_NE(policy_.get(), nullptr); }
  const char* name() const override { return "Rust"; }

 protected:
  std::string CreateFilter(const std::vector<std::string>& keys) override {
    return harness::rust_create_filter(policy_.get(), keys);
  }
  bool KeyMayMatch(const std::string& key, const std::string& filter) override {
    const bool r = leveldb_bloom_key_may_match(policy_.get(), key.data(), key.size(),
                                               reinterpret_cast<const uint8_t*>(filter.data()),
                                               filter.size());
    // The LevelDB-callback entry point must give the same answer.
    const uint8_t cb = leveldb_bloom_cb_key_may_match(policy_.get(), key.data(), key.size(),
                                                      filter.data(), filter.size());
    EXPECT_EQ(r, cb != 0) << "key_may_match vs cb_key_may_match, key " << harness::to_hex(key);
    return r;
  }

 private:
  harness::RustPolicy policy_;
};

std::unique_ptr<BloomImpl> MakeImpl(const std::string& which) {
  if (which == "LevelDB") return std::unique_ptr<BloomImpl>(new LevelDBBloom());
  return std::unique_ptr<BloomImpl>(new RustBloom());
}

struct LengthResult {
  int length;
  size_t filter_size;
  int false_positives;
  std::string filter;
};

// LevelDB's VaryingLengths body; returns what it saw at each length.
std::vector<LengthResult> VaryingLengths(BloomImpl* b, int* good, int* mediocre) {
  std::vector<LengthResult> results;
  *good = *mediocre = 0;
  for (int length = 1; length <= 10000; length = NextLength(length)) {
    b->Reset();
    for (int i = 0; i < length; i++) b->Add(Key(i));
    b->Build();
    EXPECT_LE(b->FilterSize(), static_cast<size_t>((length * 10 / 8) + 40))
        << b->name() << ", length " << length;
    const std::string filter = b->filter();
    int missing = 0;
    for (int i = 0; i < length; i++) {
      if (!b->Matches(Key(i))) missing++;
    }
    EXPECT_EQ(missing, 0) << b->name() << ", length " << length << ": inserted keys not matched";
    const int fp = b->FalsePositives();
    const double rate = fp / 10000.0;
    EXPECT_LE(rate, 0.02) << b->name() << ", length " << length;
    if (rate > 0.0125) {
      (*mediocre)++;
    } else {
      (*good)++;
    }
    results.push_back(LengthResult{length, b->FilterSize(), fp, filter});
  }
  return results;
}

class BloomCases : public testing::TestWithParam<std::string> {};

TEST_P(BloomCases, EmptyFilter) {
  auto b = MakeImpl(GetParam());
  // As in LevelDB: never built, so the filter is the empty string.
  ASSERT_EQ(b->FilterSize(), 0u);
  ASSERT_TRUE(!b->Matches("hello"));
  ASSERT_TRUE(!b->Matches("world"));
  // And a filter built from zero keys.
  b->Reset();
  b->Build();
  ASSERT_GE(b->FilterSize(), 2u);
  ASSERT_TRUE(!b->Matches("hello"));
  ASSERT_TRUE(!b->Matches("world"));
}

TEST_P(BloomCases, Small) {
  auto b = MakeImpl(GetParam());
  b->Add("hello");
  b->Add("world");
  ASSERT_TRUE(b->Matches("hello"));
  ASSERT_TRUE(b->Matches("world"));
  ASSERT_TRUE(!b->Matches("x"));
  ASSERT_TRUE(!b->Matches("foo"));
}

TEST_P(BloomCases, VaryingLengths) {
  auto b = MakeImpl(GetParam());
  int good = 0, mediocre = 0;
  VaryingLengths(b.get(), &good, &mediocre);
  std::printf("bloom_leveldb_cases_test: %s: false positives: %d good, %d mediocre\n",
              b->name(), good, mediocre);
  ASSERT_LE(mediocre, good / 5);
}

INSTANTIATE_TEST_SUITE_P(Impl, BloomCases, testing::Values("LevelDB", "Rust"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// The Rust filters and answers are LevelDB's, case by case.
TEST(BloomCasesCompare, EmptyAndSmallSameAsLevelDB) {
  LevelDBBloom ldb;
  RustBloom rust;
  for (BloomImpl* b : {static_cast<BloomImpl*>(&ldb), static_cast<BloomImpl*>(&rust)}) {
    b->Add("hello");
    b->Add("world");
    b->Build();
  }
  EXPECT_EQ(harness::to_hex(rust.filter()), harness::to_hex(ldb.filter()));
  for (const char* k : {"hello", "world", "x", "foo", ""}) {
    EXPECT_EQ(rust.Matches(k), ldb.Matches(k)) << k;
  }
  ldb.Reset();
  rust.Reset();
  ldb.Build();
  rust.Build();
  EXPECT_EQ(harness::to_hex(rust.filter()), harness::to_hex(ldb.filter()));
  for (const char* k : {"hello", "world", ""}) EXPECT_EQ(rust.Matches(k), ldb.Matches(k)) << k;
}

TEST(BloomCasesCompare, VaryingLengthsSameAsLevelDB) {
  LevelDBBloom ldb;
  RustBloom rust;
  int ldb_good = 0, ldb_mediocre = 0, rust_good = 0, rust_mediocre = 0;
  const auto expected = VaryingLengths(&ldb, &ldb_good, &ldb_mediocre);
  const auto got = VaryingLengths(&rust, &rust_good, &rust_mediocre);
  ASSERT_EQ(got.size(), expected.size());

  std::printf("bloom_leveldb_cases_test: VaryingLengths (bits_per_key 10, 10000 probes)\n");
  std::printf("  %6s %8s %11s %11s %s\n", "length", "bytes", "LevelDB FPs", "Rust FPs", "filters");
  for (size_t i = 0; i < expected.size(); i++) {
    const LengthResult& e = expected[i];
    const LengthResult& g = got[i];
    ASSERT_EQ(g.length, e.length);
    const bool same_filter = g.filter == e.filter;
    std::printf("  %6d %8zu %11d %11d %s\n", e.length, e.filter_size, e.false_positives,
                g.false_positives, same_filter ? "equal" : "DIFFERENT");
    EXPECT_EQ(g.filter_size, e.filter_size) << "length " << e.length;
    EXPECT_EQ(g.false_positives, e.false_positives) << "length " << e.length;
    EXPECT_TRUE(same_filter) << "length " << e.length;
  }
  std::printf("bloom_leveldb_cases_test: %zu lengths; LevelDB %d good / %d mediocre, "
              "Rust %d good / %d mediocre\n",
              expected.size(), ldb_good, ldb_mediocre, rust_good, rust_mediocre);
  EXPECT_EQ(rust_good, ldb_good);
  EXPECT_EQ(rust_mediocre, ldb_mediocre);
  EXPECT_LE(ldb_mediocre, ldb_good / 5);
  EXPECT_LE(rust_mediocre, rust_good / 5);
}

}  // namespace
