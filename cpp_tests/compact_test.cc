// The compact filter format (leveldb_bloom_policy_create_compact) against real LevelDB 1.23:
//
//   - stock LevelDB answers every compact filter "may match", and a compact filter is as long
//     as LevelDB's Bloom filter for the same keys and bits per key;
//   - the compact policy answers LevelDB's Bloom filters and every other non-compact filter
//     (malformed ones, and filters ending in 32..255, which no release of this library
//     writes) exactly as LevelDB's KeyMayMatch;
//   - databases written with the compact policy through LevelDB's C API read back with the
//     compact policy (filters rejecting absent keys), with stock LevelDB and with this
//     library's Bloom policy; a database mixing LevelDB Bloom tables, compact tables and
//     tables whose filters end in 32..255 reads back whole with each;
//   - filter blocks built with the compact policy are read by LevelDB's FilterBlockReader.
//
// Every expectation comes from LevelDB in the same process (linked from the static archive,
// for FilterBlockReader), never from this library's own output. The only properties of the
// format itself used are its documented marker rule (a compact filter's last byte is 31;
// LevelDB's Bloom filters end in k = 1..30) and "no false negatives".
//
// Environment: LEVELDB_BLOOM_SEED (random seed), LEVELDB_BLOOM_COMPACT_DB_KEYS (keys of the
// compact database, default 200000; half as many absent keys are probed),
// LEVELDB_BLOOM_COMPACT_FB_LAYOUTS (filter block layouts, default 400), LEVELDB_BLOOM_COMPACT_DIGEST
// (x86-64's digest of compact filters and answers, which this run's must equal).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "leveldb/c.h"
#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"
#include "leveldb_bloom.h"
#include "leveldb_filter_block.h"

namespace {

using u64 = unsigned long long;  // for printf

// One line of the test's report: every count, whatever its type, as the %llu that prints it.
template <typename... Counts>
void ReportCounts(const char* format, Counts... counts) {
  std::printf(format, static_cast<u64>(counts)...);
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

struct PolicyDeleter {
  void operator()(leveldb_bloom_policy* p) const { leveldb_bloom_policy_destroy(p); }
};
using PolicyPtr = std::unique_ptr<leveldb_bloom_policy, PolicyDeleter>;

PolicyPtr compact_policy(double bits_per_key) {
  return PolicyPtr(leveldb_bloom_policy_create_compact(bits_per_key));
}
PolicyPtr bloom_policy(int bits_per_key) {
  return PolicyPtr(leveldb_bloom_policy_create(bits_per_key));
}

// A copy in an allocation of exactly its size, so that reading past it is a real overread
// (visible under the sanitizers and valgrind).
struct ExactBuffer {
  explicit ExactBuffer(const std::string& s) : len(s.size()), data(new uint8_t[s.size()]) {
    if (len != 0) std::memcpy(data.get(), s.data(), len);
  }
  const uint8_t* bytes() const { return data.get(); }
  const char* chars() const { return reinterpret_cast<const char*>(data.get()); }
  leveldb::Slice slice() const { return leveldb::Slice(chars(), len); }
  size_t len;
  std::unique_ptr<uint8_t[]> data;
};

std::string stock_filter(const leveldb::FilterPolicy& p, const std::vector<std::string>& keys) {
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  std::string out;
  p.CreateFilter(slices.data(), static_cast<int>(slices.size()), &out);
  return out;
}

// Our answer through all three query entry points; they must agree with each other.
bool our_answer(const leveldb_bloom_policy* policy, const ExactBuffer& f, const std::string& key,
                uint64_t* inconsistent) {
  const bool a = leveldb_bloom_key_may_match(policy, key.data(), key.size(), f.bytes(), f.len);
  const uint8_t b = leveldb_bloom_cb_key_may_match(const_cast<leveldb_bloom_policy*>(policy),
                                                   key.data(), key.size(), f.chars(), f.len);
  const char* kp = key.data();
  const size_t kl = key.size();
  uint8_t c = 0x55;
  EXPECT_EQ(leveldb_bloom_key_may_match_batch(policy, &kp, &kl, 1, f.bytes(), f.len, &c),
            LEVELDB_BLOOM_OK);
  if ((b != 0) != a || (c != 0) != a) (*inconsistent)++;
  return a;
}

// Random keys as the other suites make them: 0..max_len arbitrary bytes.
std::vector<std::string> random_keys(std::mt19937_64& rng, size_t n, size_t max_len) {
  std::vector<std::string> keys(n);
  for (auto& k : keys) k = harness::random_key(rng, max_len);
  return keys;
}

std::string random_bytes(std::mt19937_64& rng, size_t len) {
  std::string s(len, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

bool all_zero(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == 0; });
}

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(CompactOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kStaticArchive);
}

// The compact policy presents itself to LevelDB as LevelDB's Bloom policy does (the name is
// what a table records and what a reader compares), and reports its settings.
// Compact filters have no LevelDB to compare with: their definition is their bytes, which
// must be the same on every architecture. This digest (FNV-1a over every filter built and
// every answer given, for keys that depend on nothing but a fixed generator) is printed;
// scripts/cross hands x86-64's to each other architecture's run in
// LEVELDB_BLOOM_COMPACT_DIGEST, which it must equal. The single-key and the batch query
// run on every filter (the batch in AVX2 lanes where there are some, scalar elsewhere).
TEST(CompactFilters, DigestOfFiltersAndAnswers) {
  std::mt19937_64 rng(0x636f6d70616374ull);  // fixed: the digest may depend on nothing else
  uint64_t digest = 14695981039346656037ull;
  auto mix = [&](const void* data, size_t len) {
    for (size_t i = 0; i < len; i++) {
      digest = (digest ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
    }
  };
  auto key = [&] { return random_bytes(rng, static_cast<size_t>(rng() % 41)); };
  uint64_t filters = 0, queries = 0, false_negatives = 0, batch_differs = 0;
  for (double bpk : {2.0, 5.0, 8.0, 10.0, 12.5, 16.0, 20.0, 24.0, 32.0}) {
    PolicyPtr policy = compact_policy(bpk);
    ASSERT_NE(policy, nullptr);
    for (size_t n : {1, 2, 5, 10, 30, 100, 1000, 3000}) {
      std::vector<std::string> members(n), absent(2 * n);
      for (auto& k : members) k = key();
      for (auto& k : absent) k = key();
      std::vector<const char*> ptrs;
      std::vector<size_t> lens;
      for (const auto& k : members) {
        ptrs.push_back(k.data());
        lens.push_back(k.size());
      }
      std::string filter(leveldb_bloom_filter_len(policy.get(), n), '\0');
      size_t len = 0;
      ASSERT_EQ(leveldb_bloom_create_filter(policy.get(), ptrs.data(), lens.data(), n,
                                            reinterpret_cast<uint8_t*>(&filter[0]), filter.size(),
                                            &len),
                LEVELDB_BLOOM_OK);
      filter.resize(len);
      mix(filter.data(), filter.size());
      filters++;
      const ExactBuffer f(filter);
      std::vector<std::string> asked = members;
      asked.insert(asked.end(), absent.begin(), absent.end());
      std::vector<const char*> aptrs;
      std::vector<size_t> alens;
      for (const auto& k : asked) {
        aptrs.push_back(k.data());
        alens.push_back(k.size());
      }
      std::vector<uint8_t> batch(asked.size());
      ASSERT_EQ(leveldb_bloom_key_may_match_batch(policy.get(), aptrs.data(), alens.data(),
                                                  asked.size(), f.bytes(), f.len, batch.data()),
                LEVELDB_BLOOM_OK);
      for (size_t i = 0; i < asked.size(); i++) {
        const uint8_t answer = leveldb_bloom_key_may_match(policy.get(), asked[i].data(),
                                                           asked[i].size(), f.bytes(), f.len);
        mix(&answer, 1);
        queries++;
        if (i < n && !answer) false_negatives++;
        if ((batch[i] != 0) != (answer != 0)) batch_differs++;
      }
    }
  }
  std::printf("compact digest: %016llx over %llu filters and %llu queries\n",
              static_cast<u64>(digest), static_cast<u64>(filters), static_cast<u64>(queries));
  EXPECT_EQ(false_negatives, 0u);
  EXPECT_EQ(batch_differs, 0u);
  if (const char* want = std::getenv("LEVELDB_BLOOM_COMPACT_DIGEST")) {
    char got[17];
    std::snprintf(got, sizeof got, "%016llx", static_cast<u64>(digest));
    EXPECT_STREQ(got, want) << "compact filters or answers differ from x86-64's";
  }
}

TEST(CompactPolicy, NameFormatAndBitsPerKey) {
  std::unique_ptr<const leveldb::FilterPolicy> stock(leveldb::NewBloomFilterPolicy(10));
  for (double bpk : {0.0, 2.0, 9.5, 10.0, 32.0}) {
    PolicyPtr p = compact_policy(bpk);
    ASSERT_NE(p, nullptr) << bpk;
    EXPECT_STREQ(leveldb_bloom_policy_name(p.get()), stock->Name());
    EXPECT_STREQ(leveldb_bloom_cb_name(p.get()), stock->Name());
    EXPECT_EQ(leveldb_bloom_policy_format(p.get()), LEVELDB_BLOOM_FORMAT_COMPACT);
    EXPECT_EQ(leveldb_bloom_policy_bits_per_key(p.get()), bpk);
  }
  PolicyPtr b = bloom_policy(10);
  EXPECT_EQ(leveldb_bloom_policy_format(b.get()), LEVELDB_BLOOM_FORMAT_BLOOM);
  PolicyPtr r(leveldb_bloom_policy_create_for_fp_rate(0.01, LEVELDB_BLOOM_FORMAT_COMPACT));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(leveldb_bloom_policy_format(r.get()), LEVELDB_BLOOM_FORMAT_COMPACT);
  EXPECT_STREQ(leveldb_bloom_policy_name(r.get()), stock->Name());
}

// ---------------------------------------------------------------------------
// 2. Stock LevelDB (and our Bloom policy) answer every compact filter "may match".
// ---------------------------------------------------------------------------

TEST(CompactFilters, StockLevelDBAnswersMayMatch) {
  std::mt19937_64 rng(harness::seed() ^ 0xC0A1C7ull);
  std::unique_ptr<const leveldb::FilterPolicy> stock10(leveldb::NewBloomFilterPolicy(10));
  PolicyPtr bloom10 = bloom_policy(10);
  const double kBpks[] = {0, 2, 4, 6, 8, 10, 12, 16, 20.5, 32};

  uint64_t filters = 0, queries = 0, stock_no = 0, bloom_no = 0, compact_fn = 0;
  uint64_t length_checked = 0, length_wrong = 0, marker_ok = 0, zero_filters = 0, bad_marker = 0;
  uint64_t inconsistent = 0, compact_rejected = 0, absent_queries = 0;
  for (double bpk : kBpks) {
    PolicyPtr compact = compact_policy(bpk);
    ASSERT_NE(compact, nullptr) << bpk;
    const bool integral = bpk == std::floor(bpk);
    std::unique_ptr<const leveldb::FilterPolicy> same_bpk(
        leveldb::NewBloomFilterPolicy(static_cast<int>(bpk)));
    std::unique_ptr<const leveldb::FilterPolicy> next_bpk(
        leveldb::NewBloomFilterPolicy(static_cast<int>(bpk) + 1));
    // Every key count 0..300.
    for (size_t n = 0; n <= 300; n++) {
      const std::vector<std::string> keys = random_keys(rng, n, (n % 2) ? 16 : 120);
      const std::vector<std::string> absent = random_keys(rng, 40, 24);
      const std::string built = harness::rust_create_filter(compact.get(), keys);
      ASSERT_FALSE(built.empty()) << "bpk " << bpk << ", " << n << " keys";
      const ExactBuffer f(built);
      filters++;

      // Length: LevelDB's Bloom filter for the same keys at the same bits per key; between
      // the two neighbouring integral settings for a fractional one.
      const size_t stock_len = stock_filter(*same_bpk, keys).size();
      length_checked++;
      if (integral) {
        if (f.len != stock_len && ++length_wrong <= 5) {
          ADD_FAILURE() << "bpk " << bpk << ", " << n << " keys: compact filter " << f.len
                        << " bytes, LevelDB's Bloom filter " << stock_len;
        }
      } else {
        const size_t next_len = stock_filter(*next_bpk, keys).size();
        if ((f.len < stock_len || f.len > next_len) && ++length_wrong <= 5) {
          ADD_FAILURE() << "bpk " << bpk << ", " << n << " keys: compact filter " << f.len
                        << " bytes, outside LevelDB's " << stock_len << ".." << next_len;
        }
      }
      // The documented marker: 31, or an all-zero filter when no filter fits.
      const unsigned last = f.len ? f.data[f.len - 1] : 0;
      if (last == 31) {
        marker_ok++;
      } else if (all_zero(built)) {
        zero_filters++;
      } else if (++bad_marker <= 5) {
        ADD_FAILURE() << "bpk " << bpk << ", " << n << " keys: last byte " << last
                      << " (neither a compact marker nor an all-zero filter)";
      }

      for (int which = 0; which < 2; which++) {
        for (const std::string& k : which == 0 ? keys : absent) {
          queries++;
          if (!stock10->KeyMayMatch(leveldb::Slice(k), f.slice()) && ++stock_no <= 5) {
            ADD_FAILURE() << "LevelDB answered no match: bpk " << bpk << ", " << n
                          << " keys, key " << harness::to_hex(k) << ", filter "
                          << harness::to_hex(built.substr(0, 64));
          }
          if (!our_answer(bloom10.get(), f, k, &inconsistent) && ++bloom_no <= 5) {
            ADD_FAILURE() << "our Bloom policy answered no match: bpk " << bpk << ", " << n
                          << " keys, key " << harness::to_hex(k);
          }
          const bool compact_says = our_answer(compact.get(), f, k, &inconsistent);
          if (which == 0) {
            if (!compact_says && ++compact_fn <= 5) {
              ADD_FAILURE() << "false negative of the compact policy: bpk " << bpk << ", " << n
                            << " keys, key " << harness::to_hex(k);
            }
          } else {
            absent_queries++;
            compact_rejected += !compact_says;
          }
        }
      }
    }
  }
  ReportCounts("compact_test: %llu compact filters (bits per key 0..32, 0..300 keys):"
               " %llu with a marker, %llu all-zero; %llu queries, LevelDB no-match %llu, our"
               " Bloom policy no-match %llu; length checked %llu, wrong %llu; the compact"
               " policy rejected %llu of %llu random other keys, false negatives %llu\n",
               filters, marker_ok, zero_filters, queries, stock_no, bloom_no, length_checked,
               length_wrong, compact_rejected, absent_queries, compact_fn);
  EXPECT_EQ(stock_no, 0u);
  EXPECT_EQ(bloom_no, 0u);
  EXPECT_EQ(length_wrong, 0u);
  EXPECT_EQ(bad_marker, 0u);
  EXPECT_EQ(compact_fn, 0u);
  EXPECT_EQ(inconsistent, 0u) << "single, callback and batch queries disagree";
  // The filters do filter: otherwise "LevelDB says may match" would be trivially true.
  EXPECT_GT(compact_rejected, absent_queries / 2);
  EXPECT_GT(marker_ok, filters / 2);
}

// ---------------------------------------------------------------------------
// 3. The compact policy answers non-compact filters exactly as LevelDB.
// ---------------------------------------------------------------------------

struct Agreement {
  uint64_t queries = 0, may = 0, no = 0, disagree = 0, inconsistent = 0;
};

void agree(const leveldb::FilterPolicy& stock, const std::vector<const leveldb_bloom_policy*>& ours,
           const ExactBuffer& f, const std::string& key, Agreement* a, const std::string& where) {
  const bool want = stock.KeyMayMatch(leveldb::Slice(key), f.slice());
  a->queries++;
  (want ? a->may : a->no)++;
  for (const leveldb_bloom_policy* p : ours) {
    const bool got = our_answer(p, f, key, &a->inconsistent);
    if (got != want && ++a->disagree <= 10) {
      ADD_FAILURE() << where << ": key " << harness::to_hex(key) << ": LevelDB " << want
                    << ", compact policy (bpk " << leveldb_bloom_policy_bits_per_key(p) << ") "
                    << got << "; filter (" << f.len << " bytes) "
                    << harness::to_hex(std::string(f.chars(), std::min<size_t>(f.len, 48)));
    }
  }
}

// The readers the tests below compare: compact policies of several settings (the setting
// plays no part in reading) and LevelDB's own.
struct Readers {
  Readers() {
    for (double bpk : {0.0, 3.5, 10.0, 32.0}) {
      owned.push_back(compact_policy(bpk));
      ours.push_back(owned.back().get());
    }
  }
  std::vector<PolicyPtr> owned;
  std::vector<const leveldb_bloom_policy*> ours;
  const std::unique_ptr<const leveldb::FilterPolicy> stock{leveldb::NewBloomFilterPolicy(10)};
};

TEST(CompactPolicy, AnswersLevelDBBloomFiltersAsLevelDB) {
  std::mt19937_64 rng(harness::seed() ^ 0xB100Dull);
  const Readers readers;
  for (auto* p : readers.ours) ASSERT_NE(p, nullptr);

  Agreement inserted, others;
  uint64_t filters = 0;
  for (int bpk = 0; bpk <= 20; bpk++) {
    std::unique_ptr<const leveldb::FilterPolicy> writer(leveldb::NewBloomFilterPolicy(bpk));
    for (int i = 0; i < 60; i++) {
      const size_t n = (i % 3 == 0) ? rng() % 21 : rng() % 301;
      const std::vector<std::string> keys = random_keys(rng, n, (i % 2) ? 16 : 100);
      const ExactBuffer f(stock_filter(*writer, keys));
      const std::string where = "LevelDB Bloom filter, bpk " + std::to_string(bpk) + ", " +
                                std::to_string(n) + " keys";
      for (const auto& k : keys) agree(*readers.stock, readers.ours, f, k, &inserted, where);
      for (const auto& k : random_keys(rng, 200, 24)) {
        agree(*readers.stock, readers.ours, f, k, &others, where);
      }
      filters++;
    }
  }
  ReportCounts("compact_test: %llu LevelDB Bloom filters (bpk 0..20) read by 4 compact"
               " policies: inserted keys %llu (LevelDB no-match %llu), other keys %llu"
               " (LevelDB no-match %llu); disagreements %llu\n",
               filters, inserted.queries, inserted.no, others.queries, others.no,
               inserted.disagree + others.disagree);
  EXPECT_EQ(inserted.disagree + others.disagree, 0u);
  EXPECT_EQ(inserted.inconsistent + others.inconsistent, 0u);
  EXPECT_EQ(inserted.no, 0u);
  EXPECT_GT(others.no, others.queries / 2);  // the comparison covers both answers
}

// Malformed and unusual non-compact filters: every length 0..16 with every last byte but 31
// (0 and 32..255: LevelDB "may match"; 1..30: probes into the rest), all 256 last bytes at
// lengths 0 and 1 (LevelDB: never a match), random or uniform contents; random filters of up
// to 2000 bytes ending in anything but 31. Then filters ending in 31, which the compact
// policy decodes and LevelDB answers "may match": those must not crash or read out of
// bounds, and every entry point must answer alike.
TEST(CompactPolicy, AnswersMalformedFiltersAsLevelDB) {
  std::mt19937_64 rng(harness::seed() ^ 0x3A1F0A3EDull);
  const Readers readers;
  for (auto* p : readers.ours) ASSERT_NE(p, nullptr);
  const char* const kFills[] = {"random", "zero", "0xff"};

  Agreement a, above_31;
  uint64_t filters = 0;
  for (size_t len = 0; len <= 16; len++) {
    for (int last = 0; last < 256; last++) {
      if (last == 31 && len >= 2) continue;  // a compact filter
      for (int fill = 0; fill < 3; fill++) {
        if (len <= 1 && fill > 0) continue;  // no other bytes to fill
        for (int rep = 0; rep < (fill == 0 && last <= 30 ? 4 : 1); rep++) {
          std::string s(len, '\0');
          for (size_t i = 0; i + 1 < len; i++) {
            s[i] = fill == 0 ? static_cast<char>(rng()) : fill == 1 ? '\0' : '\xff';
          }
          if (len > 0) s[len - 1] = static_cast<char>(last);
          const ExactBuffer f(s);
          const std::string where = "filter " + harness::to_hex(s) + " (" + kFills[fill] + ")";
          std::vector<std::string> keys = random_keys(rng, 64, 12);
          keys.push_back(std::string());
          for (const auto& k : keys) {
            agree(*readers.stock, readers.ours, f, k, last > 31 ? &above_31 : &a, where);
          }
          filters++;
        }
      }
    }
  }
  for (int i = 0; i < 8000; i++) {
    std::string s(2 + rng() % 1999, '\0');
    for (char& c : s) c = static_cast<char>(i % 2 ? rng() : rng() & rng());
    const int last = i % 2 ? 1 + rng() % 30 : 32 + rng() % 224;
    s.back() = static_cast<char>(last);
    const ExactBuffer f(s);
    const std::string where = "random filter of " + std::to_string(s.size()) + " bytes";
    for (const auto& k : random_keys(rng, 32, 40)) {
      agree(*readers.stock, readers.ours, f, k, last > 31 ? &above_31 : &a, where);
    }
    filters++;
  }
  ReportCounts("compact_test: %llu non-compact malformed/random filters: %llu keys ending in"
               " 0..30 (LevelDB may-match %llu, no-match %llu), %llu ending in 32..255 (LevelDB"
               " may-match %llu) x 4 compact policies, %llu disagreements\n",
               filters, a.queries, a.may, a.no, above_31.queries, above_31.may,
               a.disagree + above_31.disagree);
  EXPECT_EQ(a.disagree + above_31.disagree, 0u);
  EXPECT_EQ(a.inconsistent + above_31.inconsistent, 0u);
  EXPECT_GT(a.may, 0u);
  EXPECT_GT(a.no, 0u);
  EXPECT_GT(above_31.may, 100000u);

  // Compact-looking garbage: filters ending in 31 at lengths 2..300 with random, zero and
  // 0xff payloads and any parameter byte, and random lengths up to 2000. LevelDB says "may
  // match"; ours may say anything, but the three entry points must agree (and the sanitizers
  // stay silent).
  uint64_t garbage = 0, answered = 0, rejected = 0, inconsistent = 0;
  for (size_t len = 2; len <= 300; len++) {
    for (int fill = 0; fill < 3; fill++) {
      for (int rep = 0; rep < 8; rep++) {
        std::string s(len, '\0');
        for (size_t i = 0; i + 1 < len; i++) {
          s[i] = fill == 0 ? static_cast<char>(rng()) : fill == 1 ? '\0' : '\xff';
        }
        // The parameters: random, so that every shape comes up (the payload's own bytes
        // are random already in the long form's first parameter byte).
        if (len >= 2) s[len - 2] = static_cast<char>(rng());
        s.back() = 31;
        const ExactBuffer f(s);
        EXPECT_TRUE(readers.stock->KeyMayMatch(leveldb::Slice("k"), f.slice()));
        for (const auto& k : random_keys(rng, 8, 16)) {
          for (auto* p : readers.ours) rejected += !our_answer(p, f, k, &inconsistent);
          answered++;
        }
        garbage++;
      }
    }
  }
  for (int i = 0; i < 5000; i++) {
    std::string s(2 + rng() % 1999, '\0');
    for (char& c : s) c = static_cast<char>(rng() & rng());  // sparse-ish ones
    s.back() = 31;
    const ExactBuffer f(s);
    for (const auto& k : random_keys(rng, 8, 24)) {
      for (auto* p : readers.ours) rejected += !our_answer(p, f, k, &inconsistent);
      answered++;
    }
    garbage++;
  }
  ReportCounts("compact_test: %llu garbage filters ending in 31, %llu keys queried"
               " (%llu no-match answers over 4 policies), no crash\n",
               garbage, answered, rejected);
  EXPECT_EQ(inconsistent, 0u);
}

// ---------------------------------------------------------------------------
// Databases through LevelDB's C API.
// ---------------------------------------------------------------------------


// Batches puts and deletes (1000 per write) and keeps the model of the contents.
struct Writer {
  Writer(harness::Db* db, std::map<std::string, std::string>* live, std::set<std::string>* deleted)
      : db(db), live(live), deleted(deleted), batch(leveldb_writebatch_create()) {}
  ~Writer() {
    flush();
    leveldb_writebatch_destroy(batch);
  }
  void put(const std::string& k, const std::string& v) {
    leveldb_writebatch_put(batch, k.data(), k.size(), v.data(), v.size());
    (*live)[k] = v;
    deleted->erase(k);
    if (++pending == 1000) flush();
  }
  void del(const std::string& k) {
    leveldb_writebatch_delete(batch, k.data(), k.size());
    live->erase(k);
    deleted->insert(k);
    if (++pending == 1000) flush();
  }
  void flush() {
    if (pending > 0) db->write(batch);
    pending = 0;
  }
  harness::Db* db;
  std::map<std::string, std::string>* live;
  std::set<std::string>* deleted;
  leveldb_writebatch_t* batch;
  int pending = 0;
};

std::set<std::string> list_tables(const std::string& path) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".ldb") == 0) out.insert(name);
  }
  return out;
}


// Counts a filter policy's answers by the format of the filter asked, read from its last
// byte as the formats define it: 1..30 LevelDB Bloom (k probes), 31 compact, 32..255 no
// format of this library's (counted apart), anything else other.
struct FormatCounts {
  std::atomic<uint64_t> filters_created{0}, compact_created{0}, other_created{0};
  std::atomic<uint64_t> bloom_queries{0}, bloom_no{0}, compact_queries{0}, compact_no{0};
  std::atomic<uint64_t> above_31_queries{0}, above_31_no{0};
  std::atomic<uint64_t> other_queries{0};
  void reset_queries() {
    bloom_queries = bloom_no = compact_queries = compact_no = other_queries = 0;
    above_31_queries = above_31_no = 0;
  }
};

enum class Kind { kBloom, kCompact, kAbove31, kOther };
Kind kind_of(const char* filter, size_t len) {
  if (filter == nullptr || len < 2) return Kind::kOther;
  const unsigned last = static_cast<unsigned char>(filter[len - 1]);
  if (last >= 1 && last <= 30) return Kind::kBloom;
  if (last == 31) return Kind::kCompact;
  if (last > 31) return Kind::kAbove31;
  return Kind::kOther;
}

// A leveldb_bloom_policy behind counting callbacks (state for leveldb_filterpolicy_create).
struct Counted {
  leveldb_bloom_policy* inner;
  FormatCounts c;
};

void counted_destructor(void* state) {
  auto* s = static_cast<Counted*>(state);
  leveldb_bloom_cb_destructor(s->inner);
  s->inner = nullptr;
}

char* counted_create(void* state, const char* const* keys, const size_t* lens, int n,
                     size_t* filter_length) {
  auto* s = static_cast<Counted*>(state);
  char* f = leveldb_bloom_cb_create_filter(s->inner, keys, lens, n, filter_length);
  s->c.filters_created++;
  const Kind k = f ? kind_of(f, *filter_length) : Kind::kOther;
  (k == Kind::kCompact ? s->c.compact_created : s->c.other_created)++;
  return f;
}

uint8_t counted_may_match(void* state, const char* key, size_t length, const char* filter,
                          size_t filter_length) {
  auto* s = static_cast<Counted*>(state);
  const uint8_t r = leveldb_bloom_cb_key_may_match(s->inner, key, length, filter, filter_length);
  // A query of the kind, and a "no" when it was one.
  const auto count = [r](std::atomic<uint64_t>& queries, std::atomic<uint64_t>& no) {
    queries++;
    no += r == 0;
  };
  switch (kind_of(filter, filter_length)) {
    case Kind::kBloom:
      count(s->c.bloom_queries, s->c.bloom_no);
      break;
    case Kind::kCompact:
      count(s->c.compact_queries, s->c.compact_no);
      break;
    case Kind::kAbove31:
      count(s->c.above_31_queries, s->c.above_31_no);
      break;
    case Kind::kOther:
      s->c.other_queries++;
      break;
  }
  return r;
}

const char* counted_name(void* state) {
  return leveldb_bloom_cb_name(static_cast<Counted*>(state)->inner);
}


// leveldb_filterpolicy_t for a leveldb_bloom_policy passed as state (it then belongs to the
// LevelDB policy, as the header documents).
leveldb_filterpolicy_t* through_callbacks(leveldb_bloom_policy* p) {
  return leveldb_filterpolicy_create(p, leveldb_bloom_cb_destructor,
                                     leveldb_bloom_cb_create_filter,
                                     leveldb_bloom_cb_key_may_match, leveldb_bloom_cb_name);
}

struct Model {
  std::map<std::string, std::string> live;
  std::set<std::string> deleted;    // deleted and not written again
  std::vector<std::string> absent;  // never written
};

struct Verified {
  uint64_t live = 0, deleted = 0, absent = 0, bad = 0;
};

// Every live key has its value, deleted and absent keys are not found, and a full scan
// returns exactly the live keys. The absent keys are read last (after `before_absent`), so
// that counters reset there see only them.
Verified verify(const std::string& path, leveldb_filterpolicy_t* fp, const Model& m,
                const char* what, const std::function<void()>& before_absent = nullptr) {
  Verified st;
  harness::Db db;
  if (!db.open(path, fp, false, 256 << 10, 512 << 10)) return st;
  std::string v;
  for (const auto& kv : m.live) {
    const bool found = db.get(kv.first, &v);
    if ((!found || v != kv.second) && ++st.bad <= 5) {
      ADD_FAILURE() << what << ": live key " << harness::to_hex(kv.first.substr(0, 64)) << " "
                    << (found ? "has a wrong value" : "not found");
    }
    st.live++;
  }
  for (const std::string& k : m.deleted) {
    if (db.get(k, &v) && ++st.bad <= 5) {
      ADD_FAILURE() << what << ": deleted key " << harness::to_hex(k) << " found";
    }
    st.deleted++;
  }
  if (before_absent) before_absent();
  for (const std::string& k : m.absent) {
    if (db.get(k, &v) && ++st.bad <= 5) {
      ADD_FAILURE() << what << ": absent key " << harness::to_hex(k) << " found";
    }
    st.absent++;
  }
  if (!db.scan_equals(m.live, what)) st.bad++;
  EXPECT_EQ(st.bad, 0u) << what;
  std::printf("compact_test: %s: %llu live keys found, %llu deleted and %llu absent keys not"
              " found, %llu entries in the model, scanned\n",
              what, static_cast<u64>(st.live), static_cast<u64>(st.deleted),
              static_cast<u64>(st.absent), static_cast<u64>(m.live.size()));
  return st;
}

// Absent keys: mostly harness::number_key(odd) (inside the tables' key ranges, so the filters are
// asked), some random.
std::vector<std::string> absent_keys(std::mt19937_64& rng, size_t n, uint64_t numbered,
                                     const std::map<std::string, std::string>& live,
                                     const std::set<std::string>& deleted) {
  std::vector<std::string> out;
  while (out.size() < n) {
    std::string k = (rng() % 10 < 8) ? harness::number_key(2 * (rng() % numbered) + 1)
                                     : harness::random_key(rng, 24);
    if (live.count(k) == 0 && deleted.count(k) == 0) out.push_back(k);
  }
  return out;
}

// What a compact policy answered to the absent keys of `m` (the filters they asked, by
// kind), after `verify` read the database at `path` with it through counting callbacks.
struct AbsentAnswers {
  u64 bloom_queries, bloom_no, compact_queries, compact_no, above_31_queries, above_31_no;
};
AbsentAnswers read_with_compact_policy(const std::string& path, const Model& m, const char* what) {
  std::unique_ptr<Counted> state(new Counted{leveldb_bloom_policy_create_compact(10.0), {}});
  EXPECT_NE(state->inner, nullptr);
  leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create(
      state.get(), counted_destructor, counted_create, counted_may_match, counted_name);
  verify(path, fp, m, what, [&] { state->c.reset_queries(); });
  const FormatCounts& c = state->c;
  const AbsentAnswers answers{c.bloom_queries,   c.bloom_no,         c.compact_queries,
                              c.compact_no,      c.above_31_queries, c.above_31_no};
  leveldb_filterpolicy_destroy(fp);
  return answers;
}

// 4. A database written with the compact policy: no false negatives through LevelDB, the
// filters reject absent keys, and stock LevelDB and our Bloom policy read it all.
TEST(CompactDb, WrittenCompactReadByCompactStockAndBloom) {
  harness::TempDb tmp("compact");
  ASSERT_FALSE(tmp.dir.empty()) << "no temporary directory";
  std::mt19937_64 rng(harness::seed() ^ 0xDBC0ull);
  const uint64_t n = harness::env_count("LEVELDB_BLOOM_COMPACT_DB_KEYS", 200000);
  Model m;
  uint64_t compact_filters_written = 0, other_filters_written = 0;
  {
    auto* state =
        new Counted{support::counted(leveldb_bloom_policy_create_compact(10.0)), {}};
    ASSERT_NE(state->inner, nullptr);
    std::unique_ptr<Counted> owner(state);  // the struct; LevelDB destroys the policy
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create(
        state, counted_destructor, counted_create, counted_may_match, counted_name);
    {
      harness::Db db;
      ASSERT_TRUE(db.open(tmp.path, fp, true, 256 << 10, 512 << 10));
      Writer w(&db, &m.live, &m.deleted);
      // The empty key, a few long keys, 95% number keys, the rest random bytes.
      w.put(std::string(), "empty");
      for (size_t len : {300u, 5000u, 70000u}) w.put(random_bytes(rng, len), "long");
      const uint64_t numbered = n - n / 20;
      for (uint64_t i = 0; i < numbered; i++) w.put(harness::number_key(2 * i), harness::make_value(rng, 60, i));
      while (m.live.size() < n) w.put(harness::random_key(rng, 24), harness::make_value(rng, 60, 0));
      // Overwrites and deletions in the later tables.
      for (uint64_t i = 0; i < n / 20; i++) {
        w.put(harness::number_key(2 * (rng() % numbered)), harness::make_value(rng, 60, n + i));
      }
      for (uint64_t i = 0; i < n / 20; i++) w.del(harness::number_key(2 * (rng() % numbered)));
      w.flush();
      db.compact(std::string(), std::string("\xff\xff\xff\xff", 4));
      std::printf("compact_test: wrote %zu live keys, %zu deleted, with the compact policy:"
                  " %zu tables\n",
                  m.live.size(), m.deleted.size(), list_tables(tmp.path).size());
      m.absent = absent_keys(rng, n / 2, numbered, m.live, m.deleted);
    }
    compact_filters_written = state->c.compact_created;
    other_filters_written = state->c.other_created;

    // (a) Read back with the same compact policy, through the counting callbacks; the
    // policy's own statistics (leveldb_bloom_policy_stats on the state) must agree.
    leveldb_bloom_policy* inner = state->inner;
    const Verified st = verify(tmp.path, fp, m, "written and read with the compact policy", [&] {
      state->c.reset_queries();
      leveldb_bloom_policy_stats_reset(inner);
    });
    leveldb_bloom_stats stats{};
    ASSERT_EQ(leveldb_bloom_policy_stats(inner, &stats), LEVELDB_BLOOM_OK);
    const uint64_t q = state->c.compact_queries, no = state->c.compact_no;
    std::printf("compact_test: absent keys: %llu compact filter queries, %llu no match (%.3f%%"
                " may match); policy stats: %llu queries, %llu no match\n",
                static_cast<u64>(q), static_cast<u64>(no),
                q ? 100.0 * static_cast<double>(q - no) / static_cast<double>(q) : 0.0,
                static_cast<u64>(stats.queries), static_cast<u64>(stats.no_match));
    // Most absent keys fall inside some table's range, so the filters are asked; at 10 bits
    // per key the compact format promises well under 1% false positives, so a bound of 2%
    // only fails if the filters do not filter.
    EXPECT_GE(q, st.absent / 2) << "the filters were not consulted";
    EXPECT_GE(static_cast<double>(no), 0.98 * static_cast<double>(q));
    EXPECT_EQ(state->c.bloom_queries.load(), 0u) << "a Bloom filter in a compact-only database";
    EXPECT_EQ(stats.queries, q + state->c.bloom_queries + state->c.other_queries);
    EXPECT_EQ(stats.no_match, no);
    leveldb_filterpolicy_destroy(fp);
  }
  ReportCounts("compact_test: the compact policy built %llu compact filters, %llu others\n",
               compact_filters_written, other_filters_written);
  EXPECT_GT(compact_filters_written, 10u);
  EXPECT_EQ(other_filters_written, 0u);

  // (b) Stock LevelDB: leveldb_filterpolicy_create_bloom, then LevelDB's policy behind
  // counting callbacks, which must be asked and must never answer "no match" (it cannot read
  // compact filters).
  {
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create_bloom(10);
    verify(tmp.path, fp, m, "written compact, read with leveldb_filterpolicy_create_bloom");
    leveldb_filterpolicy_destroy(fp);
  }
  {
    harness::CountingStock s;
    leveldb_filterpolicy_t* fp = s.filter_policy();
    const Verified st = verify(tmp.path, fp, m, "written compact, read with counted LevelDB",
                               [&] { s.c.reset_queries(); });
    leveldb_filterpolicy_destroy(fp);
    ReportCounts("compact_test: LevelDB's policy asked %llu times about absent keys, %llu no"
                 " match\n",
                 s.c.queries.load(), s.c.no_match.load());
    EXPECT_GE(s.c.queries.load(), st.absent / 2);
    EXPECT_EQ(s.c.no_match.load(), 0u);
  }
  // (c) Our Bloom policy through the callbacks (the drop-in's default): reads every key.
  {
    leveldb_bloom_policy* bloom = support::counted(leveldb_bloom_policy_create(10));
    ASSERT_NE(bloom, nullptr);
    leveldb_filterpolicy_t* fp = through_callbacks(bloom);
    verify(tmp.path, fp, m, "written compact, read with our Bloom policy",
           [&] { leveldb_bloom_policy_stats_reset(bloom); });
    leveldb_bloom_stats stats{};
    ASSERT_EQ(leveldb_bloom_policy_stats(bloom, &stats), LEVELDB_BLOOM_OK);
    // As LevelDB's own policy above: compact filters are never a "no match" for it.
    EXPECT_GT(stats.queries, 0u);
    EXPECT_EQ(stats.no_match, 0u);
    leveldb_filterpolicy_destroy(fp);
  }
}

// 5. A database begun with stock LevelDB's Bloom filters and continued with the compact
// policy: tables of both formats side by side, read back with either policy.
TEST(CompactDb, LegacyBloomTablesThenCompact) {
  harness::TempDb tmp("compact");
  ASSERT_FALSE(tmp.dir.empty()) << "no temporary directory";
  std::mt19937_64 rng(harness::seed() ^ 0x313Dull);
  constexpr uint64_t kPhase1 = 80000, kPhase2 = 40000;
  Model m;

  // Phase 1: stock LevelDB only.
  {
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create_bloom(10);
    {
      harness::Db db;
      ASSERT_TRUE(db.open(tmp.path, fp, true, 256 << 10, 512 << 10));
      Writer w(&db, &m.live, &m.deleted);
      for (uint64_t i = 0; i < kPhase1; i++) w.put(harness::number_key(2 * i), harness::make_value(rng, 60, i));
      w.flush();
      // Everything into sorted, range-partitioned tables: a level-0 table left over would
      // span the whole key range and drag every legacy table into phase 2's compactions.
      db.compact(std::string(), "key~");
    }
    leveldb_filterpolicy_destroy(fp);
  }
  const std::set<std::string> legacy = list_tables(tmp.path);
  ASSERT_GT(legacy.size(), 1u);

  // Phase 2: the compact policy. Its writes stay in the key range "key0".."key3" (a quarter
  // of the keys), so that compactions rewrite only the legacy tables overlapping it. (Writes
  // elsewhere would make level-0 tables spanning every key; reads charging them for seeks
  // would then compact, and rewrite, every legacy table.) The last writes stay in the log,
  // to be flushed by the next open.
  auto in_range = [](const std::string& k) { return k.size() > 3 && k[3] >= '0' && k[3] <= '3'; };
  std::vector<std::string> range_keys;
  for (const auto& kv : m.live) {
    if (in_range(kv.first)) range_keys.push_back(kv.first);
  }
  uint64_t compact_created = 0, other_created = 0;
  {
    auto* state = new Counted{leveldb_bloom_policy_create_compact(10.0), {}};
    ASSERT_NE(state->inner, nullptr);
    std::unique_ptr<Counted> owner(state);
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create(
        state, counted_destructor, counted_create, counted_may_match, counted_name);
    {
      harness::Db db;
      ASSERT_TRUE(db.open(tmp.path, fp, false, 256 << 10, 512 << 10));
      Writer w(&db, &m.live, &m.deleted);
      uint64_t added = 0;
      for (uint64_t i = kPhase1; added < kPhase2; i++) {
        const std::string k = harness::number_key(2 * i);
        if (!in_range(k)) continue;
        w.put(k, harness::make_value(rng, 60, i));
        range_keys.push_back(k);
        added++;
        if (added == kPhase2 / 2) {
          w.flush();
          db.compact("key0", "key4");  // a flush and a compaction midway
        }
      }
      for (uint64_t i = 0; i < kPhase2 / 4; i++) {
        w.put(range_keys[rng() % range_keys.size()], harness::make_value(rng, 60, kPhase1 + kPhase2 + i));
      }
      for (uint64_t i = 0; i < kPhase2 / 4; i++) w.del(range_keys[rng() % range_keys.size()]);
    }
    compact_created = state->c.compact_created;
    other_created = state->c.other_created;
    leveldb_filterpolicy_destroy(fp);
  }
  const std::set<std::string> after = list_tables(tmp.path);
  size_t kept = 0;
  for (const auto& t : legacy) kept += after.count(t);
  const size_t added_tables = after.size() - kept;
  std::printf("compact_test: mixed database: %zu tables after phase 1 (LevelDB Bloom), %zu"
              " after phase 2 (compact): %zu legacy tables kept, %zu new; the compact policy"
              " built %llu compact filters, %llu others; %zu live keys, %zu deleted\n",
              legacy.size(), after.size(), kept, added_tables, static_cast<u64>(compact_created),
              static_cast<u64>(other_created), m.live.size(), m.deleted.size());
  EXPECT_GT(kept, 0u) << "no legacy table left: the test would not mix formats";
  EXPECT_GT(added_tables, 0u);
  EXPECT_GT(compact_created, 0u);
  EXPECT_EQ(other_created, 0u);

  m.absent = absent_keys(rng, 60000, kPhase1 + 4 * kPhase2, m.live, m.deleted);

  // Read with the compact policy: both formats consulted, both rejecting absent keys.
  const AbsentAnswers a =
      read_with_compact_policy(tmp.path, m, "mixed database read with the compact policy");
  std::printf("compact_test: mixed database, absent keys: LevelDB Bloom filters asked %llu"
              " times (%llu no match), compact filters %llu times (%llu no match)\n",
              a.bloom_queries, a.bloom_no, a.compact_queries, a.compact_no);
  EXPECT_GT(a.bloom_no, 0u);
  EXPECT_GT(a.compact_no, 0u);
  // 10 bits per key: LevelDB's Bloom filters about 1% false positives, compact fewer.
  EXPECT_GE(static_cast<double>(a.bloom_no), 0.95 * static_cast<double>(a.bloom_queries));
  EXPECT_GE(static_cast<double>(a.compact_no), 0.98 * static_cast<double>(a.compact_queries));
  // Read with stock LevelDB.
  {
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create_bloom(10);
    verify(tmp.path, fp, m, "mixed database read with leveldb_filterpolicy_create_bloom");
    leveldb_filterpolicy_destroy(fp);
  }
}

// 5b. A database that mixes three kinds of tables: tables whose filters end in 32..255
// (written under LevelDB's policy name by callbacks that make such filters, as an
// unreleased pre-release of this library did; no release writes them), compact tables
// written with the compact policy, and LevelDB Bloom tables written by stock LevelDB. Each
// phase writes keys of its own prefix, so no compaction merges one kind into another; every
// key is then read back with the compact policy, our Bloom policy and stock LevelDB, and
// absent keys beside each phase's keys show how each kind of filter answers: the compact
// policy answers the foreign filters "may match", as LevelDB does.

// A filter of 10 bits per key that ends in 32..255 (the payload hashed from the keys, so
// that it is not all zero and differs between filters).
char* foreign_create(void*, const char* const* keys, const size_t* lens, int n,
                     size_t* filter_length) {
  const size_t len = std::max<size_t>(9, (static_cast<size_t>(n) * 10 + 7) / 8 + 1);
  char* f = static_cast<char*>(std::malloc(len));
  if (f == nullptr) return nullptr;
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < n; i++) {
    for (size_t j = 0; j < lens[i]; j++) h = (h ^ static_cast<unsigned char>(keys[i][j])) * 0x100000001b3ull;
  }
  for (size_t i = 0; i + 1 < len; i++) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    f[i] = static_cast<char>(h >> 56);
  }
  f[len - 1] = static_cast<char>(32 + (h >> 33) % 224);
  *filter_length = len;
  return f;
}
uint8_t foreign_may_match(void*, const char*, size_t, const char*, size_t) { return 1; }
const char* foreign_name(void*) { return "leveldb.BuiltinBloomFilter2"; }
void foreign_destructor(void*) {}

TEST(CompactDb, FiltersEndingAbove31CompactAndBloomTables) {
  harness::TempDb tmp("mixed");
  ASSERT_FALSE(tmp.dir.empty()) << "no temporary directory";
  std::mt19937_64 rng(harness::seed() ^ 0x313Eull);
  Model m;
  char buf[64];
  auto numbered = [&](const char* prefix, int i) {
    std::snprintf(buf, sizeof buf, "%s%06d", prefix, i);
    return std::string(buf);
  };
  auto counted_compact = [] {
    return new Counted{leveldb_bloom_policy_create_compact(10.0), {}};
  };
  auto wrap = [](Counted* state) {
    return leveldb_filterpolicy_create(state, counted_destructor, counted_create,
                                       counted_may_match, counted_name);
  };
  // 20000 keys "<prefix>%06d" (even numbers), flushed and compacted among themselves.
  auto write_keys = [&](leveldb_filterpolicy_t* fp, const std::string& prefix) {
    harness::Db db;
    const bool first = prefix == "foreign-key-";
    ASSERT_TRUE(db.open(tmp.path, fp, first, 256 << 10, 512 << 10));
    Writer w(&db, &m.live, &m.deleted);
    for (int i = 0; i < 40000; i += 2) w.put(numbered(prefix.c_str(), i), harness::make_value(rng, 40, i));
    w.flush();
    db.compact(prefix, prefix.substr(0, prefix.size() - 1) + ".");
  };
  // Phase 1: filters ending in 32..255.
  {
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create(
        nullptr, foreign_destructor, foreign_create, foreign_may_match, foreign_name);
    write_keys(fp, "foreign-key-");
    leveldb_filterpolicy_destroy(fp);
  }
  const std::set<std::string> foreign_tables = list_tables(tmp.path);
  ASSERT_FALSE(foreign_tables.empty());
  // Phase 2: compact tables, with the compact policy.
  uint64_t compact_written = 0;
  {
    std::unique_ptr<Counted> state(counted_compact());
    ASSERT_NE(state->inner, nullptr);
    leveldb_filterpolicy_t* fp = wrap(state.get());
    write_keys(fp, "compact-key-");
    compact_written = state->c.compact_created;
    leveldb_filterpolicy_destroy(fp);
  }
  // Phase 3: Bloom tables, with stock LevelDB.
  {
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create_bloom(10);
    write_keys(fp, "stock-key-");
    leveldb_filterpolicy_destroy(fp);
  }
  const std::set<std::string> after = list_tables(tmp.path);
  size_t foreign_kept = 0;
  for (const auto& t : foreign_tables) foreign_kept += after.count(t);
  std::printf("compact_test: mixed tables: %zu with filters ending above 31 (%zu kept), %zu"
              " tables in all; %llu compact filters written\n",
              foreign_tables.size(), foreign_kept, after.size(),
              static_cast<u64>(compact_written));
  EXPECT_EQ(foreign_kept, foreign_tables.size()) << "a foreign table was rewritten: nothing mixes";
  EXPECT_GT(compact_written, 0u);

  for (const char* prefix : {"foreign-key-", "compact-key-", "stock-key-"}) {
    for (int i = 0; i < 5000; i++) m.absent.push_back(numbered(prefix, 2 * (rng() % 20000) + 1));
  }

  // The compact policy: every kind of filter consulted; the foreign ones answer "may match"
  // (as stock LevelDB answers them), the others reject absent keys.
  const AbsentAnswers a =
      read_with_compact_policy(tmp.path, m, "mixed tables read with the compact policy");
  std::printf("compact_test: mixed tables, absent keys: filters ending above 31 asked %llu"
              " times (%llu no match), compact filters %llu (%llu), LevelDB Bloom filters"
              " %llu (%llu)\n",
              a.above_31_queries, a.above_31_no, a.compact_queries, a.compact_no,
              a.bloom_queries, a.bloom_no);
  EXPECT_GT(a.above_31_queries, 1000u);
  EXPECT_EQ(a.above_31_no, 0u) << "LevelDB answers every such filter \"may match\"";
  EXPECT_GT(a.compact_queries, 1000u);
  EXPECT_GT(a.bloom_queries, 1000u);
  // 10 bits per key: compact filters let through well under 1%; LevelDB's Bloom filters
  // several percent on these sequential keys (its hash's weakness: docs/testing.md, "Limitations worth knowing").
  EXPECT_GE(static_cast<double>(a.compact_no), 0.98 * static_cast<double>(a.compact_queries));
  EXPECT_GE(static_cast<double>(a.bloom_no), 0.85 * static_cast<double>(a.bloom_queries));
  // Our Bloom policy (the drop-in's default) and stock LevelDB: everything, compact filters
  // unfiltered.
  {
    leveldb_bloom_policy* bloom = leveldb_bloom_policy_create(10);
    ASSERT_NE(bloom, nullptr);
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create(
        bloom, leveldb_bloom_cb_destructor, leveldb_bloom_cb_create_filter,
        leveldb_bloom_cb_key_may_match, leveldb_bloom_cb_name);
    verify(tmp.path, fp, m, "mixed tables read with our Bloom policy");
    leveldb_filterpolicy_destroy(fp);
  }
  {
    leveldb_filterpolicy_t* fp = leveldb_filterpolicy_create_bloom(10);
    verify(tmp.path, fp, m, "mixed tables read with leveldb_filterpolicy_create_bloom");
    leveldb_filterpolicy_destroy(fp);
  }
}

// ---------------------------------------------------------------------------
// 6. Filter blocks built with the compact policy, read by LevelDB's FilterBlockReader.
// ---------------------------------------------------------------------------

constexpr uint64_t kWindow = 2048;  // LevelDB's 1 << kFilterBaseLg

// Probe policies: one byte per filter, and a KeyMayMatch that reports what the reader handed
// it. Run through LevelDB's own builder and reader on the same layout, they tell for a query
// (offset, key) whether LevelDB's reader asks the policy at all (a missing or malformed entry
// is "may match" without asking) and whether the filter it asks about is empty (a window
// without keys), independently of any filter format.
class ProbePolicy : public leveldb::FilterPolicy {
 public:
  // kNonEmpty: answers whether the filter is non-empty; kNever: always "no match".
  enum Mode { kNonEmpty, kNever };
  explicit ProbePolicy(Mode mode) : mode_(mode) {}
  const char* Name() const override { return "leveldb_bloom.test.Probe"; }
  void CreateFilter(const leveldb::Slice*, int, std::string* dst) const override {
    dst->push_back('p');
  }
  bool KeyMayMatch(const leveldb::Slice&, const leveldb::Slice& filter) const override {
    return mode_ == kNonEmpty && !filter.empty();
  }

 private:
  Mode mode_;
};

struct BlockLayout {
  std::vector<std::pair<uint64_t, std::vector<std::string>>> blocks;  // offset, keys
};

BlockLayout random_block_layout(std::mt19937_64& rng) {
  BlockLayout l;
  const size_t blocks = rng() % 30;
  uint64_t off = (rng() % 4 == 0) ? rng() % (3 * kWindow) : 0;
  for (size_t b = 0; b < blocks; b++) {
    std::vector<std::string> keys;
    const size_t n = (rng() % 5 == 0) ? 0 : (rng() % 4 == 0 ? rng() % 300 : rng() % 30);
    for (size_t i = 0; i < n; i++) keys.push_back(harness::random_key(rng, 32));
    l.blocks.emplace_back(off, std::move(keys));
    switch (rng() % 6) {
      case 0: off += rng() % 64; break;                            // same window
      case 1: off += kWindow * (2 + rng() % 10); break;           // skips windows
      default: off += 500 + rng() % (3 * kWindow); break;          // a typical data block
    }
  }
  return l;
}

// The block LevelDB's own FilterBlockBuilder makes of `l` with `policy`.
std::string leveldb_block(const leveldb::FilterPolicy* policy, const BlockLayout& l) {
  leveldb::FilterBlockBuilder b(policy);
  for (const auto& blk : l.blocks) {
    b.StartBlock(blk.first);
    for (const auto& k : blk.second) b.AddKey(leveldb::Slice(k));
  }
  return b.Finish().ToString();
}

std::string our_block(const leveldb_bloom_policy* policy, const BlockLayout& l) {
  leveldb_bloom_filter_block_builder* b = leveldb_bloom_filter_block_builder_create(policy);
  EXPECT_NE(b, nullptr);
  if (b == nullptr) return std::string();
  for (const auto& blk : l.blocks) {
    EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, blk.first), LEVELDB_BLOOM_OK);
    for (const auto& k : blk.second) {
      EXPECT_EQ(leveldb_bloom_filter_block_builder_add_key(b, k.data(), k.size()),
                LEVELDB_BLOOM_OK);
    }
  }
  const uint8_t* data = nullptr;
  size_t len = 0;
  EXPECT_EQ(leveldb_bloom_filter_block_builder_finish(b, &data, &len), LEVELDB_BLOOM_OK);
  std::string out(reinterpret_cast<const char*>(data), len);
  leveldb_bloom_filter_block_builder_destroy(b);
  return out;
}

TEST(CompactFilterBlock, LevelDBReadsCompactBlocks) {
  std::mt19937_64 rng(harness::seed() ^ 0xF1B0C0ull);
  const uint64_t layouts = harness::env_count("LEVELDB_BLOOM_COMPACT_FB_LAYOUTS", 400);
  std::unique_ptr<const leveldb::FilterPolicy> stock(leveldb::NewBloomFilterPolicy(10));
  const ProbePolicy non_empty(ProbePolicy::kNonEmpty), never(ProbePolicy::kNever);
  const double kBpks[] = {0, 2, 4, 10, 20.5, 32};

  uint64_t member_queries = 0, stock_missed = 0, ours_missed = 0, structure_wrong = 0;
  uint64_t other_queries = 0, stock_no = 0, ours_no = 0, ours_no_consulted = 0, consulted = 0;
  uint64_t bloom_queries = 0, bloom_disagree = 0, bloom_no = 0, empty_filters = 0;
  for (uint64_t li = 0; li < layouts; li++) {
    const double bpk = kBpks[li % (sizeof kBpks / sizeof kBpks[0])];
    PolicyPtr compact = compact_policy(bpk);
    ASSERT_NE(compact, nullptr);
    const BlockLayout l = random_block_layout(rng);
    const ExactBuffer ours(our_block(compact.get(), l));
    // The same layout through LevelDB's builder: with the probe policy, and with LevelDB's
    // Bloom policy (for the compact policy reading legacy blocks).
    const ExactBuffer probes(leveldb_block(&non_empty, l));
    const ExactBuffer bloom(leveldb_block(stock.get(), l));
    leveldb::FilterBlockReader stock_on_ours(stock.get(), ours.slice());
    leveldb::FilterBlockReader probe_non_empty(&non_empty, probes.slice());
    leveldb::FilterBlockReader probe_never(&never, probes.slice());
    leveldb::FilterBlockReader stock_on_bloom(stock.get(), bloom.slice());

    // Queries: each key at its block's offset and the last byte of its window; absent keys
    // at every block offset, neighbouring windows and offsets past the end.
    std::vector<uint64_t> offsets;
    for (const auto& blk : l.blocks) offsets.push_back(blk.first);
    const uint64_t end = l.blocks.empty() ? 0 : l.blocks.back().first;
    for (uint64_t off : {end + kWindow, end + 5 * kWindow, uint64_t{1} << 40, ~uint64_t{0}}) {
      offsets.push_back(off);
    }
    const std::vector<std::string> absent = random_keys(rng, 20, 32);
    auto ask = [&](uint64_t off, const std::string& k, bool member) {
      const leveldb::Slice key(k);
      const bool stock_says = stock_on_ours.KeyMayMatch(off, key);
      const bool ours_says = leveldb_bloom_filter_block_may_match(
          compact.get(), ours.bytes(), ours.len, off, k.data(), k.size());
      const bool bypassed = probe_never.KeyMayMatch(off, key);  // "may match" unasked
      // Asked about an empty filter (a window without keys): LevelDB's Bloom policy's answer
      // to an empty filter is the expected one, from both readers.
      const bool empty = !bypassed && !probe_non_empty.KeyMayMatch(off, key);
      const bool empty_answer = stock->KeyMayMatch(key, leveldb::Slice());
      empty_filters += empty;
      // LevelDB on our compact block: as on its own layout, and "may match" from every
      // non-empty filter (it cannot read compact filters).
      const bool stock_expected = empty ? empty_answer : true;
      if (stock_says != stock_expected && ++structure_wrong <= 5) {
        ADD_FAILURE() << "bpk " << bpk << ": FilterBlockReader on the compact block says "
                      << stock_says << " at offset " << off << ", expected " << stock_expected
                      << (empty ? " (empty filter)" : bypassed ? " (no filter)" : "")
                      << "; block " << harness::to_hex(std::string(
                             ours.chars(), std::min<size_t>(ours.len, 200)));
      }
      // Our reader: empty filters and missing entries as LevelDB.
      if ((empty && ours_says != empty_answer) || (bypassed && !ours_says)) {
        if (++structure_wrong <= 5) {
          ADD_FAILURE() << "bpk " << bpk << ": leveldb_bloom_filter_block_may_match says "
                        << ours_says << " at offset " << off << " where LevelDB's reader has "
                        << (bypassed ? "no filter to ask" : "an empty filter");
        }
      }
      if (member) {
        member_queries++;
        if (!stock_says && ++stock_missed <= 5) {
          ADD_FAILURE() << "bpk " << bpk << ": FilterBlockReader misses key "
                        << harness::to_hex(k) << " at offset " << off;
        }
        if (!ours_says && ++ours_missed <= 5) {
          ADD_FAILURE() << "bpk " << bpk << ": leveldb_bloom_filter_block_may_match misses key "
                        << harness::to_hex(k) << " at offset " << off;
        }
      } else {
        other_queries++;
        stock_no += !stock_says;
        ours_no += !ours_says;
        if (!empty && !bypassed) {
          consulted++;
          ours_no_consulted += !ours_says;
        }
      }
      // The compact policy reading LevelDB's Bloom block of the same layout: as LevelDB.
      const bool want = stock_on_bloom.KeyMayMatch(off, key);
      const bool got = leveldb_bloom_filter_block_may_match(compact.get(), bloom.bytes(),
                                                            bloom.len, off, k.data(), k.size());
      bloom_queries++;
      bloom_no += !want;
      if (want != got && ++bloom_disagree <= 5) {
        ADD_FAILURE() << "compact policy on LevelDB's Bloom filter block: " << got
                      << ", LevelDB " << want << " at offset " << off << ", key "
                      << harness::to_hex(k);
      }
    };
    for (const auto& blk : l.blocks) {
      for (const auto& k : blk.second) {
        ask(blk.first, k, true);
        ask(blk.first | (kWindow - 1), k, true);  // same window
      }
    }
    for (uint64_t off : offsets) {
      for (const auto& k : absent) ask(off, k, false);
    }
  }
  ReportCounts("compact_test: %llu filter blocks: %llu member queries (FilterBlockReader"
               " missed %llu, ours %llu); %llu other queries (FilterBlockReader no-match %llu,"
               " ours %llu; ours rejected %llu of %llu where a filter was consulted);"
               " %llu queries on empty filters; structure mismatches %llu; compact policy on LevelDB Bloom blocks: %llu"
               " queries (LevelDB no-match %llu), %llu disagreements\n",
               layouts, member_queries, stock_missed, ours_missed, other_queries, stock_no, ours_no,
               ours_no_consulted, consulted, empty_filters, structure_wrong, bloom_queries,
               bloom_no, bloom_disagree);
  EXPECT_EQ(stock_missed, 0u);
  EXPECT_EQ(ours_missed, 0u);
  EXPECT_EQ(structure_wrong, 0u);
  EXPECT_EQ(bloom_disagree, 0u);
  EXPECT_GT(member_queries, 10000u);
  EXPECT_GT(empty_filters, 0u);  // the layouts have windows without keys
  EXPECT_GT(stock_no, 0u);
  // Our compact filters reject most absent keys (those of bits per key 0 and 2 reject none).
  EXPECT_GT(ours_no_consulted, consulted / 3);
  EXPECT_GT(bloom_no, 0u);
}

}  // namespace
