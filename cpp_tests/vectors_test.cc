// Test vectors from real LevelDB, for the language bindings (bindings/python/, bindings/go/).
//
// Computes, with LevelDB 1.23's own leveldb::NewBloomFilterPolicy (the shared
// library linked into this binary), a fixed set of filters and query answers
// and compares them with the committed file tests/vectors/leveldb_filters.json,
// byte for byte. With LEVELDB_BLOOM_UPDATE_VECTORS=1 in the environment it
// (re)writes the file instead. Env LEVELDB_BLOOM_VECTORS_FILE overrides the path.
//
// Nothing in the file comes from the Rust library: keys are generated here
// (a fixed splitmix64 stream, independent of LEVELDB_BLOOM_SEED), filters are
// LevelDB's CreateFilter, answers are LevelDB's KeyMayMatch. A second test also
// checks the Rust library against the same vectors, as a cross-check.
//
// File format (all byte strings are lowercase hex):
//   key_sets[]:  {name, keys[], probes[]}   probes: the keys of the set (every
//                                           5th for large sets) then absent keys
//   filters[]:   {key_set, bits_per_key, filter, answers[]}
//                answers[i] = KeyMayMatch(key_sets[key_set].probes[i], filter)
//   malformed[]: {filter, probes[], answers[]}   hand-made filters
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "harness.h"
#include "leveldb_bloom.h"

namespace {

const int kBitsPerKey[] = {0, 1, 10, 16, 100};

// A fixed pseudo-random stream (splitmix64), so the vectors never depend on
// the standard library or on the harness's seed.
using SplitMix64 = support::Rng;

std::string RandomKey(SplitMix64& rng) {
  const uint64_t max_len = rng.Next() % 4 == 0 ? 8 : 40;
  const size_t len = static_cast<size_t>(rng.Next() % (max_len + 1));
  std::string key(len, '\0');
  for (size_t i = 0; i < len; i++) key[i] = static_cast<char>(rng.Next() & 0xff);
  return key;
}

struct KeySet {
  std::string name;
  std::vector<std::string> keys;
  std::vector<std::string> probes;
};

// Absent keys asked about every small set (some are present in some sets).
std::vector<std::string> CommonProbes() {
  return {std::string(),
          "hello",
          "world",
          "hello world",
          "helloworld",
          "Hello",
          "hell",
          "hello0",
          std::string("hello\0", 6),
          "x",
          "xy",
          "xyz",
          "abcd",
          "abcde",
          "leveldb",
          "dup",
          "other",
          std::string(1, '\0'),
          std::string(4, '\0'),
          "\x80",
          "\xff",
          "\xff\xff\xff\xff",
          "caf\xc3\xa9",
          "key000000",
          "key000001",
          std::string(100, 'a')};
}

std::vector<KeySet> MakeKeySets() {
  std::vector<KeySet> sets;
  auto add_small = [&](const std::string& name, std::vector<std::string> keys) {
    KeySet s;
    s.name = name;
    s.keys = std::move(keys);
    s.probes = s.keys;
    for (const auto& p : CommonProbes()) s.probes.push_back(p);
    sets.push_back(std::move(s));
  };
  add_small("empty", {});
  add_small("one_key", {"leveldb"});
  add_small("hello_world", {"hello", "world"});
  add_small("duplicates", {"dup", "dup", "dup", "other", "other", "dup"});
  add_small("empty_key", {std::string()});
  add_small("empty_key_and_more", {std::string(), "a", "ab", "abc"});
  add_small("high_bytes", {"\x80", "\xff", "\x80\x81", "\xfe\xff\x80", "\xff\xff\xff\xff",
                           "\x80\x00\xff\x00\x7f", "caf\xc3\xa9", "\xe2\x82\xac\xe2\x82\xac",
                           std::string("\x00\x80\x00\x80\x00\x80\x00\x80\x00", 9)});

  SplitMix64 rng(0x6c6576656c646221ULL);  // "leveldb!"
  for (size_t n : {size_t{100}, size_t{1000}}) {
    KeySet s;
    s.name = "random_" + std::to_string(n);
    for (size_t i = 0; i < n; i++) s.keys.push_back(RandomKey(rng));
    const size_t step = n <= 100 ? 1 : 5;
    for (size_t i = 0; i < n; i += step) s.probes.push_back(s.keys[i]);
    for (int i = 0; i < 200; i++) s.probes.push_back(RandomKey(rng));
    sets.push_back(std::move(s));
  }
  return sets;
}

struct Malformed {
  std::string filter;
};

// Filters LevelDB never builds: shorter than 2 bytes (never match), a probe
// count (last byte) of 0 or above 30 (always match), and short bit arrays.
std::vector<Malformed> MakeMalformed() {
  std::vector<Malformed> m;
  m.push_back({std::string()});
  for (int last : {0, 1, 6, 30, 31, 255}) {
    for (size_t len = 1; len <= 3; len++) {
      for (char fill : {'\0', '\xff', '\x5a'}) {
        if (len == 1 && fill != '\0') continue;
        std::string f(len, fill);
        f[len - 1] = static_cast<char>(last);
        m.push_back({f});
      }
    }
  }
  // Longer filters with an unusual probe count.
  for (int last : {0, 31, 255}) {
    std::string f(9, '\x00');
    for (size_t i = 0; i < 8; i++) f[i] = static_cast<char>(0x11 * (i + 1));
    f[8] = static_cast<char>(last);
    m.push_back({f});
  }
  return m;
}

std::vector<std::string> MalformedProbes() {
  std::vector<std::string> p = CommonProbes();
  SplitMix64 rng(0x6d616c666f726d21ULL);  // "malform!"
  for (int i = 0; i < 24; i++) p.push_back(RandomKey(rng));
  return p;
}

std::string Hex(const std::string& s) { return harness::to_hex(s); }

std::string HexList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); i++) {
    if (i) out += ", ";
    out += "\"" + Hex(v[i]) + "\"";
  }
  return out + "]";
}

std::string BoolList(const std::vector<bool>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); i++) {
    if (i) out += ", ";
    out += v[i] ? "true" : "false";
  }
  return out + "]";
}

std::string LevelDBFilter(const leveldb::FilterPolicy& p, const std::vector<std::string>& keys) {
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  std::string out;
  p.CreateFilter(slices.data(), static_cast<int>(slices.size()), &out);
  return out;
}

std::vector<bool> LevelDBAnswers(const leveldb::FilterPolicy& p, const std::string& filter,
                                 const std::vector<std::string>& probes) {
  std::vector<bool> answers;
  for (const auto& k : probes) answers.push_back(p.KeyMayMatch(k, filter));
  return answers;
}

// The whole file, as LevelDB computes it.
std::string GenerateVectors() {
  std::unique_ptr<const leveldb::FilterPolicy> p10(leveldb::NewBloomFilterPolicy(10));
  std::ostringstream j;
  j << "{\n";
  j << "  \"format\": 1,\n";
  j << "  \"generator\": \"cpp_tests/vectors_test.cc (LEVELDB_BLOOM_UPDATE_VECTORS=1)\",\n";
  j << "  \"oracle\": \"LevelDB " << leveldb::kMajorVersion << "." << leveldb::kMinorVersion
    << " shared library: leveldb::NewBloomFilterPolicy(bits_per_key)->CreateFilter and "
       "KeyMayMatch\",\n";
  j << "  \"policy_name\": \"" << p10->Name() << "\",\n";
  j << "  \"encoding\": \"byte strings are lowercase hex; answers[i] is KeyMayMatch(probes[i], "
       "filter)\",\n";

  const std::vector<KeySet> sets = MakeKeySets();
  j << "  \"key_sets\": [\n";
  for (size_t i = 0; i < sets.size(); i++) {
    j << "    {\n";
    j << "      \"name\": \"" << sets[i].name << "\",\n";
    j << "      \"keys\": " << HexList(sets[i].keys) << ",\n";
    j << "      \"probes\": " << HexList(sets[i].probes) << "\n";
    j << "    }" << (i + 1 < sets.size() ? "," : "") << "\n";
  }
  j << "  ],\n";

  j << "  \"filters\": [\n";
  bool first = true;
  for (const KeySet& s : sets) {
    for (int bpk : kBitsPerKey) {
      std::unique_ptr<const leveldb::FilterPolicy> p(leveldb::NewBloomFilterPolicy(bpk));
      const std::string filter = LevelDBFilter(*p, s.keys);
      if (!first) j << ",\n";
      first = false;
      j << "    {\n";
      j << "      \"key_set\": \"" << s.name << "\",\n";
      j << "      \"bits_per_key\": " << bpk << ",\n";
      j << "      \"filter\": \"" << Hex(filter) << "\",\n";
      j << "      \"answers\": " << BoolList(LevelDBAnswers(*p, filter, s.probes)) << "\n";
      j << "    }";
    }
  }
  j << "\n  ],\n";

  const std::vector<std::string> probes = MalformedProbes();
  const std::vector<Malformed> malformed = MakeMalformed();
  j << "  \"malformed\": [\n";
  for (size_t i = 0; i < malformed.size(); i++) {
    j << "    {\n";
    j << "      \"filter\": \"" << Hex(malformed[i].filter) << "\",\n";
    j << "      \"probes\": " << HexList(probes) << ",\n";
    j << "      \"answers\": " << BoolList(LevelDBAnswers(*p10, malformed[i].filter, probes))
      << "\n";
    j << "    }" << (i + 1 < malformed.size() ? "," : "") << "\n";
  }
  j << "  ]\n";
  j << "}\n";
  return j.str();
}

// tests/vectors/leveldb_filters.json next to this source file's directory.
std::string VectorsPath() {
  const char* env = std::getenv("LEVELDB_BLOOM_VECTORS_FILE");
  if (env != nullptr && *env != '\0') return env;
  std::string here = __FILE__;
  const size_t slash = here.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : here.substr(0, slash);
  return dir + "/../tests/vectors/leveldb_filters.json";
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Up to 70 characters either side of column `col` of `s`.
std::string Around(const std::string& s, size_t col) {
  const size_t from = col > 70 ? col - 70 : 0;
  return (from > 0 ? "..." : "") + s.substr(from, 140) + (from + 140 < s.size() ? "..." : "");
}

TEST(VectorsOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

TEST(Vectors, CommittedFileIsWhatLevelDBComputes) {
  const std::string path = VectorsPath();
  const std::string expected = GenerateVectors();
  EXPECT_LT(expected.size(), 1000u * 1000u) << "the vectors file should stay well under 1 MB";

  const char* update = std::getenv("LEVELDB_BLOOM_UPDATE_VECTORS");
  if (update != nullptr && std::strcmp(update, "1") == 0) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(out) << "cannot write " << path;
    out << expected;
    out.close();
    ASSERT_TRUE(out) << "cannot write " << path;
    std::printf("vectors_test: wrote %s (%zu bytes)\n", path.c_str(), expected.size());
  }

  std::string actual;
  ASSERT_TRUE(ReadFile(path, &actual))
      << "cannot read " << path << "; generate it with LEVELDB_BLOOM_UPDATE_VECTORS=1";
  if (actual == expected) {
    std::printf("vectors_test: %s matches LevelDB (%zu bytes)\n", path.c_str(), actual.size());
    return;
  }
  const std::vector<std::string> a = Lines(actual), e = Lines(expected);
  size_t i = 0;
  while (i < a.size() && i < e.size() && a[i] == e[i]) i++;
  const std::string la = i < a.size() ? a[i] : "<end of file>";
  const std::string le = i < e.size() ? e[i] : "<end of output>";
  size_t col = 0;
  while (col < la.size() && col < le.size() && la[col] == le[col]) col++;
  ADD_FAILURE() << path << " differs from what LevelDB computes, first at line " << (i + 1)
                << ", column " << (col + 1) << ":\n  file:    " << Around(la, col)
                << "\n  LevelDB: " << Around(le, col)
                << "\nIf the change is intended, regenerate it with "
                   "LEVELDB_BLOOM_UPDATE_VECTORS=1.";
}

// Cross-check: the Rust library builds the same filters and gives the same
// answers as LevelDB on every vector (through create_filter, key_may_match and
// key_may_match_batch).
TEST(Vectors, RustLibraryAgreesWithLevelDBOnTheVectors) {
  size_t filters = 0, queries = 0;
  auto check = [&](const leveldb_bloom_policy* rust, const std::string& filter,
                   const std::vector<std::string>& probes, const std::vector<bool>& expected,
                   const std::string& where) {
    const support::KeyArrays arrays(probes);
    std::vector<uint8_t> batch(probes.size(), 0x55);
    ASSERT_EQ(leveldb_bloom_key_may_match_batch(
                  rust, arrays.ptrs.data(), arrays.lens.data(), probes.size(),
                  reinterpret_cast<const uint8_t*>(filter.data()), filter.size(), batch.data()),
              LEVELDB_BLOOM_OK)
        << where;
    for (size_t i = 0; i < probes.size(); i++) {
      const bool single = leveldb_bloom_key_may_match(
          rust, probes[i].data(), probes[i].size(),
          reinterpret_cast<const uint8_t*>(filter.data()), filter.size());
      EXPECT_EQ(single, expected[i]) << where << ", probe " << Hex(probes[i]);
      EXPECT_EQ(batch[i], expected[i] ? 1 : 0) << where << ", probe " << Hex(probes[i]);
      queries++;
    }
  };

  for (const KeySet& s : MakeKeySets()) {
    for (int bpk : kBitsPerKey) {
      std::unique_ptr<const leveldb::FilterPolicy> p(leveldb::NewBloomFilterPolicy(bpk));
      harness::RustPolicy rust(bpk);
      ASSERT_NE(rust.get(), nullptr);
      const std::string where = s.name + " at " + std::to_string(bpk) + " bits per key";
      const std::string filter = LevelDBFilter(*p, s.keys);
      EXPECT_EQ(Hex(harness::rust_create_filter(rust.get(), s.keys)), Hex(filter)) << where;
      check(rust.get(), filter, s.probes, LevelDBAnswers(*p, filter, s.probes), where);
      filters++;
    }
  }
  std::unique_ptr<const leveldb::FilterPolicy> p10(leveldb::NewBloomFilterPolicy(10));
  harness::RustPolicy rust10(10);
  const std::vector<std::string> probes = MalformedProbes();
  for (const Malformed& m : MakeMalformed()) {
    check(rust10.get(), m.filter, probes, LevelDBAnswers(*p10, m.filter, probes),
          "malformed filter " + Hex(m.filter));
    filters++;
  }
  std::printf("vectors_test: Rust agrees with LevelDB on %zu filters, %zu queries\n", filters,
              queries);
}

}  // namespace
