// The compact format's key hash, XXH3_64bits(key) (XXH3, 64 bits, seed 0), checked from C
// against Debian's libxxhash: compact filters built through the C API must answer exactly as
// libxxhash's hashes and the format's rules predict.
//
// The Rust hash is not part of the C API, so it is observed through the filters. The format
// (docs/compact-format.md; src/compact/, "Format rule" comments) makes a compact filter the set of the
// fingerprints (bucket, low) of its keys' hashes h, where
//   marker = the last byte = 32 + 8 * (L - 1) + kappa,   P = 8 * (filter length - 1),
//   Z = floor(P * (8 + kappa) / (8 * (L + 2))),
//   bucket = (h * Z) >> 64 (128-bit product),   low = h mod 2^L,
// and a key may match iff its fingerprint is in the set. With h from libxxhash, the answer
// to every query is predicted without any of our code; a key whose Rust hash differed from
// libxxhash's would get a wrong answer whenever exactly one of the two hashes hits the set,
// so filters with few low bits (20-40% of absent keys hit) catch a difference at any key
// length, and single-key filters with L = 28 check pairs of keys whose libxxhash
// fingerprints collide on 30 bits (a different hash would almost never match them).
//
// tests/xxh3_oracle.rs compares the full 64-bit values with libxxhash directly.
//
// Environment: LEVELDB_BLOOM_SEED (random seed), LEVELDB_BLOOM_XXH_FILTERS (filters per bits
// per key setting, default 300).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "harness.h"
#include "leveldb_bloom.h"

namespace {

__extension__ typedef unsigned __int128 u128;

uint64_t reference_hash(const std::string& key) {
  return XXH3_64bits(key.data(), key.size());
}

// The layout a compact filter's marker and length fix (format rules above).
struct Layout {
  bool compact = false;  // last byte >= 32 and length >= 2
  uint32_t low_bits = 0;
  uint32_t kappa = 0;
  uint64_t buckets = 0;

  uint64_t fingerprint(uint64_t h) const {
    const uint64_t bucket = static_cast<uint64_t>((static_cast<u128>(h) * buckets) >> 64);
    const uint64_t low = h & ((uint64_t{1} << low_bits) - 1);
    // (bucket, low) as one number: buckets stay far below 2^36 in these filters.
    return bucket << low_bits | low;
  }
};

Layout layout_of(const std::string& filter) {
  Layout l;
  if (filter.size() < 2) return l;
  const unsigned marker = static_cast<unsigned char>(filter.back());
  if (marker < 32) return l;
  l.compact = true;
  l.low_bits = (marker - 32) / 8 + 1;
  l.kappa = (marker - 32) % 8;
  const u128 payload_bits = static_cast<u128>(filter.size() - 1) * 8;
  l.buckets = static_cast<uint64_t>(payload_bits * (8 + l.kappa) / (8 * (l.low_bits + 2)));
  return l;
}

std::string compact_filter(const leveldb_bloom_policy* policy,
                           const std::vector<std::string>& keys) {
  return harness::rust_create_filter(policy, keys);
}

// A key of exactly `len` random bytes.
std::string key_of_length(std::mt19937_64& rng, size_t len) {
  std::string k(len, '\0');
  for (char& c : k) c = static_cast<char>(rng());
  return k;
}

// The oracle itself: libxxhash's XXH3_64bits is XXH3 as released in xxHash 0.8 (its
// published value for the empty input; XXH3's output was not stable before 0.8.0).
TEST(Xxh3Oracle, LibxxhashIsXXH3) {
  EXPECT_EQ(XXH3_64bits("", 0), 0x2D06800538D394C2ull);
  EXPECT_GE(XXH_versionNumber(), 800u);
  std::printf("xxh3_test: libxxhash %u\n", XXH_versionNumber());
}

// Filters of 0-300 keys at several bits per key; every query key of every length 0..300
// (one per length per filter) plus the inserted keys is answered as libxxhash predicts.
TEST(Xxh3Oracle, CompactFiltersAnswerAsLibxxhashPredicts) {
  const uint64_t seed = harness::seed();
  std::mt19937_64 rng(seed ^ 0x7878683634ull);
  const uint64_t per_bpk = harness::env_count("LEVELDB_BLOOM_XXH_FILTERS", 300);
  // Low bits per key first: there most absent keys' answers depend on the hash.
  const double kBpks[] = {3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 16.0, 32.0};
  constexpr size_t kMaxLen = 300;

  uint64_t filters = 0, unfiltered = 0, queries = 0, predicted_hits = 0, wrong = 0;
  std::vector<uint64_t> per_length_hits(kMaxLen + 1, 0), per_length_misses(kMaxLen + 1, 0);
  for (double bpk : kBpks) {
    leveldb_bloom_policy* policy = leveldb_bloom_policy_create_compact(bpk);
    ASSERT_NE(policy, nullptr) << bpk;
    for (uint64_t f = 0; f < per_bpk && wrong < 10; f++) {
      const size_t n = (f % 10 == 0) ? rng() % 4 : rng() % 301;
      std::vector<std::string> keys(n);
      for (auto& k : keys) k = key_of_length(rng, rng() % (kMaxLen + 1));
      const std::string filter = compact_filter(policy, keys);
      ASSERT_FALSE(filter.empty());
      const Layout l = layout_of(filter);
      filters++;
      if (!l.compact) {
        // No fingerprint fitted: the format leaves the filter all zero ("may match").
        EXPECT_EQ(filter, std::string(filter.size(), '\0')) << "bpk " << bpk << ", " << n;
        unfiltered++;
        continue;
      }
      std::unordered_set<uint64_t> set;
      for (const auto& k : keys) set.insert(l.fingerprint(reference_hash(k)));

      std::vector<std::string> probes = keys;
      for (size_t len = 0; len <= kMaxLen; len++) probes.push_back(key_of_length(rng, len));
      for (size_t i = 0; i < probes.size(); i++) {
        const std::string& q = probes[i];
        const bool want = set.count(l.fingerprint(reference_hash(q))) != 0;
        const bool got = leveldb_bloom_key_may_match(
            policy, q.data(), q.size(), reinterpret_cast<const uint8_t*>(filter.data()),
            filter.size());
        queries++;
        if (i >= keys.size()) {
          predicted_hits += want;
          (want ? per_length_hits : per_length_misses)[q.size()]++;
        }
        if (got != want && ++wrong <= 10) {
          ADD_FAILURE() << "bpk " << bpk << ", " << n << " keys, L " << l.low_bits << ", Z "
                        << l.buckets << ": key " << harness::to_hex(q.substr(0, 64)) << " ("
                        << q.size() << " bytes, libxxhash " << std::hex << reference_hash(q)
                        << std::dec << "): predicted " << want << ", answered " << got;
        }
      }
    }
    leveldb_bloom_policy_destroy(policy);
  }
  uint64_t min_hits = UINT64_MAX, min_misses = UINT64_MAX;
  for (size_t len = 0; len <= kMaxLen; len++) {
    min_hits = std::min(min_hits, per_length_hits[len]);
    min_misses = std::min(min_misses, per_length_misses[len]);
  }
  std::printf("xxh3_test: %llu compact filters (%llu unfiltered), %llu queries, %llu probes"
              " predicted to hit by libxxhash; per key length 0..300 at least %llu predicted"
              " hits and %llu misses; %llu wrong answers\n",
              static_cast<unsigned long long>(filters),
              static_cast<unsigned long long>(unfiltered),
              static_cast<unsigned long long>(queries),
              static_cast<unsigned long long>(predicted_hits),
              static_cast<unsigned long long>(min_hits),
              static_cast<unsigned long long>(min_misses), static_cast<unsigned long long>(wrong));
  EXPECT_EQ(wrong, 0u);
  // Every length must see both predictions often, or a length-specific hash bug could hide.
  // The least hits per length grows with the workload (225 seen at the default 300 filters
  // per setting, 65 at 100, 14 at 30), so the bound scales with it: 60 at the default.
  const uint64_t least = std::max<uint64_t>(per_bpk / 5, 5);
  EXPECT_GE(min_hits, least);
  EXPECT_GE(min_misses, least);
}

// Pairs of keys whose libxxhash fingerprints collide under the 1-key layout (L = 28 low
// bits and a few buckets, about 30 bits): the filter of one must match the other. With a
// hash other than XXH3 the two would collide with probability about 2^-30.
TEST(Xxh3Oracle, CollidingFingerprintsMatch) {
  std::mt19937_64 rng(harness::seed() ^ 0xC011151011ull);
  leveldb_bloom_policy* policy = leveldb_bloom_policy_create_compact(32.0);
  ASSERT_NE(policy, nullptr);
  // The layout of a 1-key filter, from one such filter (the candidates' own filters are
  // checked to have it too).
  const Layout l = layout_of(compact_filter(policy, {"probe"}));
  ASSERT_TRUE(l.compact);
  std::printf("xxh3_test: 1-key filters: L %u, Z %llu\n", l.low_bits,
              static_cast<unsigned long long>(l.buckets));

  // 2^19 keys of 1..40 random bytes; about (2^19)^2 / 2 / (Z * 2^L) colliding pairs.
  constexpr size_t kCandidates = size_t{1} << 19;
  std::unordered_map<uint64_t, std::string> seen;
  seen.reserve(kCandidates);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < kCandidates; i++) {
    std::string k = key_of_length(rng, 1 + rng() % 40);
    const uint64_t h = reference_hash(k);
    auto it = seen.find(l.fingerprint(h));
    if (it == seen.end()) {
      seen.emplace(l.fingerprint(h), std::move(k));
    } else if (it->second != k && reference_hash(it->second) != h) {
      pairs.emplace_back(it->second, k);
    }
  }
  uint64_t matched = 0, controls = 0, control_rejected = 0;
  for (const auto& p : pairs) {
    const std::string filter = compact_filter(policy, {p.first});
    ASSERT_EQ(layout_of(filter).buckets, l.buckets);
    ASSERT_EQ(layout_of(filter).low_bits, l.low_bits);
    const bool got = leveldb_bloom_key_may_match(
        policy, p.second.data(), p.second.size(), reinterpret_cast<const uint8_t*>(filter.data()),
        filter.size());
    matched += got;
    EXPECT_TRUE(got) << "keys " << harness::to_hex(p.first) << " and "
                     << harness::to_hex(p.second) << " share a libxxhash fingerprint ("
                     << std::hex << reference_hash(p.first) << ", " << reference_hash(p.second)
                     << ") but the filter of the first does not match the second";
    // Control: the same key with its last byte changed almost never collides, so a filter
    // that matched everything would show here.
    std::string other = p.second;
    other.back() = static_cast<char>(other.back() ^ 1);
    if (l.fingerprint(reference_hash(other)) != l.fingerprint(reference_hash(p.first))) {
      controls++;
      control_rejected += !leveldb_bloom_key_may_match(
          policy, other.data(), other.size(), reinterpret_cast<const uint8_t*>(filter.data()),
          filter.size());
    }
  }
  leveldb_bloom_policy_destroy(policy);
  std::printf("xxh3_test: %zu pairs with colliding libxxhash fingerprints among %zu keys:"
              " %llu matched; %llu of %llu controls rejected\n",
              pairs.size(), kCandidates, static_cast<unsigned long long>(matched),
              static_cast<unsigned long long>(control_rejected),
              static_cast<unsigned long long>(controls));
  EXPECT_GE(pairs.size(), 20u);
  EXPECT_EQ(matched, pairs.size());
  EXPECT_EQ(control_rejected, controls);
}

}  // namespace
