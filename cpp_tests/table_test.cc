// Whole tables: LevelDB's TableBuilder writes the same file with leveldb::NewBloomFilterPolicy
// and with a FilterPolicy adapter over the Rust C API. The two files must be byte-identical,
// and each opens and reads back with leveldb::Table::Open under the other policy.
//
// Environment: LEVELDB_BLOOM_SEED (random seed for the workloads).

#include <stdlib.h>  // mkdtemp
#include <unistd.h>  // rmdir

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "leveldb/env.h"
#include "leveldb/filter_policy.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/slice.h"
#include "leveldb/status.h"
#include "leveldb/table.h"
#include "leveldb/table_builder.h"
#include "leveldb_bloom.h"

namespace {

// A leveldb::FilterPolicy whose every method calls the Rust C API.
class RustFilterPolicy : public leveldb::FilterPolicy {
 public:
  explicit RustFilterPolicy(int bits_per_key) : policy_(bits_per_key) {}

  bool ok() const { return policy_.get() != nullptr; }

  const char* Name() const override { return leveldb_bloom_policy_name(policy_.get()); }

  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override {
    create_calls_++;
    const size_t num = n > 0 ? static_cast<size_t>(n) : 0;
    std::vector<const char*> ptrs(num);
    std::vector<size_t> lens(num);
    for (size_t i = 0; i < num; i++) {
      ptrs[i] = keys[i].data();
      lens[i] = keys[i].size();
    }
    const size_t need = leveldb_bloom_filter_len(policy_.get(), num);
    const size_t old = dst->size();
    dst->resize(old + need);
    size_t out_len = 0;
    const int st = leveldb_bloom_create_filter(
        policy_.get(), num ? ptrs.data() : nullptr, num ? lens.data() : nullptr, num,
        reinterpret_cast<uint8_t*>(&(*dst)[old]), need, &out_len);
    EXPECT_EQ(st, LEVELDB_BLOOM_OK) << leveldb_bloom_status_message(st);
    EXPECT_EQ(out_len, need);
    dst->resize(old + (st == LEVELDB_BLOOM_OK && out_len <= need ? out_len : 0));
  }

  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override {
    may_match_calls_++;
    return leveldb_bloom_key_may_match(policy_.get(), key.data(), key.size(),
                                       reinterpret_cast<const uint8_t*>(filter.data()),
                                       filter.size());
  }

  uint64_t create_calls() const { return create_calls_.load(); }

 private:
  harness::RustPolicy policy_;
  mutable std::atomic<uint64_t> create_calls_{0};
  mutable std::atomic<uint64_t> may_match_calls_{0};
};

using KVs = std::vector<std::pair<std::string, std::string>>;

struct Workload {
  std::string name;
  KVs kvs;  // sorted by key, keys unique (bytewise, as LevelDB's default comparator)
};

std::string random_bytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// A value of n bytes: random (incompressible) or repetitive (snappy shrinks it).
std::string random_value(std::mt19937_64& rng, size_t n) {
  if (rng() % 2 == 0) return random_bytes(rng, n);
  std::string unit = random_bytes(rng, 1 + rng() % 16);
  std::string s;
  while (s.size() < n) s += unit;
  s.resize(n);
  return s;
}

Workload finish(std::string name, const std::set<std::string>& keys, std::mt19937_64& rng,
                size_t min_value, size_t max_value) {
  Workload w;
  w.name = std::move(name);
  for (const std::string& k : keys) {
    w.kvs.emplace_back(k, random_value(rng, min_value + rng() % (max_value - min_value + 1)));
  }
  return w;
}

// The key counts below are for LEVELDB_BLOOM_TABLE_KEYS=20000 (the default), and scale with
// it (valgrind's run takes fewer).
std::vector<Workload> workloads() {
  std::mt19937_64 rng(harness::seed() ^ 0x7AB1Eull);
  const uint64_t total = harness::env_count("LEVELDB_BLOOM_TABLE_KEYS", 20000);
  const auto scaled = [total](size_t n) { return std::max<size_t>(1, n * total / 20000); };
  std::vector<Workload> out;
  {  // Small ASCII keys, small values.
    std::set<std::string> keys;
    char buf[32];
    for (size_t i = 0; i < scaled(20000); i++) {
      std::snprintf(buf, sizeof buf, "key%08zu", i * 7);
      keys.insert(buf);
    }
    out.push_back(finish("small", keys, rng, 0, 40));
  }
  {  // Keys with bytes >= 0x80 (hash tail bytes are read unsigned).
    std::set<std::string> keys;
    while (keys.size() < scaled(10000)) {
      std::string k = harness::random_key(rng, 20);
      for (char& c : k) {
        if (rng() % 2) c = static_cast<char>(static_cast<unsigned char>(c) | 0x80);
      }
      keys.insert(k);
    }
    out.push_back(finish("high-bytes", keys, rng, 1, 100));
  }
  {  // The empty key, every 1-byte key, many 2- and 3-byte keys.
    std::set<std::string> keys;
    keys.insert(std::string());
    for (int b = 0; b < 256; b++) keys.insert(std::string(1, static_cast<char>(b)));
    while (keys.size() < 257 + scaled(7743)) keys.insert(random_bytes(rng, 2 + rng() % 2));
    out.push_back(finish("short-keys", keys, rng, 0, 8));
  }
  {  // Large values: data blocks far larger than 2 KiB, so most filters are empty.
    std::set<std::string> keys;
    while (keys.size() < scaled(600)) keys.insert(harness::random_key(rng, 32));
    out.push_back(finish("large-values", keys, rng, 500, 20000));
  }
  {  // Random keys up to 200 bytes, mixed values.
    std::set<std::string> keys;
    while (keys.size() < scaled(8000)) keys.insert(harness::random_key(rng, 200));
    out.push_back(finish("random", keys, rng, 0, 300));
  }
  return out;
}

struct TempDir {
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/leveldb_bloom_table_XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path = buf.data();
  }
  ~TempDir() {
    if (path.empty()) return;
    // Tables left behind by a failed assertion.
    std::vector<std::string> children;
    leveldb::Env* env = leveldb::Env::Default();
    if (env->GetChildren(path, &children).ok()) {
      for (const std::string& c : children) {
        if (c != "." && c != "..") env->RemoveFile(path + "/" + c);
      }
    }
    rmdir(path.c_str());
  }
  std::string path;
};

leveldb::Status write_table(const std::string& fname, const leveldb::Options& options,
                            const KVs& kvs, uint64_t* size) {
  leveldb::WritableFile* file = nullptr;
  leveldb::Status s = leveldb::Env::Default()->NewWritableFile(fname, &file);
  if (!s.ok()) return s;
  {
    leveldb::TableBuilder builder(options, file);
    for (const auto& kv : kvs) builder.Add(kv.first, kv.second);
    s = builder.Finish();
    *size = builder.FileSize();
  }
  if (s.ok()) s = file->Sync();
  leveldb::Status c = file->Close();
  if (s.ok()) s = c;
  delete file;
  return s;
}

std::string read_file(const std::string& fname) {
  std::string data;
  leveldb::Status s = leveldb::ReadFileToString(leveldb::Env::Default(), fname, &data);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return data;
}

// Opens `fname` with `options` (whose filter policy is the other implementation's) and checks
// that a full scan and seeks return exactly `kvs`.
void verify_table(const std::string& fname, uint64_t size, const leveldb::Options& options,
                  const KVs& kvs, std::mt19937_64& rng) {
  leveldb::RandomAccessFile* file = nullptr;
  leveldb::Status s = leveldb::Env::Default()->NewRandomAccessFile(fname, &file);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::unique_ptr<leveldb::RandomAccessFile> file_owner(file);
  leveldb::Table* table = nullptr;
  s = leveldb::Table::Open(options, file, size, &table);
  ASSERT_TRUE(s.ok()) << "Table::Open(" << fname << ") with " << options.filter_policy->Name()
                      << ": " << s.ToString();
  std::unique_ptr<leveldb::Table> table_owner(table);
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(ro));
  size_t i = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), i++) {
    ASSERT_LT(i, kvs.size());
    ASSERT_EQ(it->key().ToString(), kvs[i].first) << "entry " << i;
    ASSERT_EQ(it->value().ToString(), kvs[i].second) << "entry " << i;
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  ASSERT_EQ(i, kvs.size());
  for (int j = 0; j < 200 && !kvs.empty(); j++) {
    const auto& kv = kvs[rng() % kvs.size()];
    it->Seek(kv.first);
    ASSERT_TRUE(it->Valid());
    ASSERT_EQ(it->key().ToString(), kv.first);
    ASSERT_EQ(it->value().ToString(), kv.second);
  }
}

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(TableOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

TEST(Table, StockAndRustPoliciesWriteIdenticalTables) {
  const std::vector<Workload> loads = workloads();
  TempDir dir;
  ASSERT_FALSE(dir.path.empty()) << "mkdtemp failed";
  std::mt19937_64 rng(harness::seed() ^ 0x0FE4ull);

  struct Config {
    size_t block_size;
    leveldb::CompressionType compression;
  };
  const Config configs[] = {{1024, leveldb::kNoCompression},
                            {1024, leveldb::kSnappyCompression},
                            {4096, leveldb::kNoCompression},
                            {4096, leveldb::kSnappyCompression}};
  const int bpks[] = {0, 1, 10, 16};

  uint64_t pairs = 0, bytes = 0, entries = 0, filters_created = 0;
  for (const Workload& w : loads) {
    for (const Config& cfg : configs) {
      for (int bpk : bpks) {
        SCOPED_TRACE(w.name + " block_size=" + std::to_string(cfg.block_size) +
                     " compression=" + std::to_string(cfg.compression) +
                     " bpk=" + std::to_string(bpk));
        std::unique_ptr<const leveldb::FilterPolicy> stock(leveldb::NewBloomFilterPolicy(bpk));
        RustFilterPolicy rust(bpk);
        ASSERT_TRUE(rust.ok());
        ASSERT_STREQ(rust.Name(), stock->Name());

        leveldb::Options options;
        options.block_size = cfg.block_size;
        options.compression = cfg.compression;

        const std::string stock_file = dir.path + "/stock.ldb";
        const std::string rust_file = dir.path + "/rust.ldb";
        uint64_t stock_size = 0, rust_size = 0;
        options.filter_policy = stock.get();
        leveldb::Status s = write_table(stock_file, options, w.kvs, &stock_size);
        ASSERT_TRUE(s.ok()) << s.ToString();
        options.filter_policy = &rust;
        s = write_table(rust_file, options, w.kvs, &rust_size);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_GT(rust.create_calls(), 0u);
        filters_created += rust.create_calls();

        const std::string a = read_file(stock_file);
        const std::string b = read_file(rust_file);
        EXPECT_EQ(stock_size, a.size());
        EXPECT_EQ(rust_size, b.size());
        if (a != b) {
          size_t first = 0;
          while (first < a.size() && first < b.size() && a[first] == b[first]) first++;
          ADD_FAILURE() << "tables differ: stock " << a.size() << " bytes, Rust " << b.size()
                        << " bytes, first difference at byte " << first;
        }
        // The filter block is there, under the name both policies share.
        if (cfg.compression == leveldb::kNoCompression) {
          EXPECT_NE(a.find(std::string("filter.") + stock->Name()), std::string::npos);
        }

        // Each file reads back under the other policy.
        options.filter_policy = &rust;
        verify_table(stock_file, a.size(), options, w.kvs, rng);
        options.filter_policy = stock.get();
        verify_table(rust_file, b.size(), options, w.kvs, rng);

        leveldb::Env::Default()->RemoveFile(stock_file);
        leveldb::Env::Default()->RemoveFile(rust_file);
        pairs++;
        bytes += a.size();
        entries += w.kvs.size();
      }
    }
  }
  std::printf("[table] compared %llu table pairs byte for byte (%llu bytes per side, %llu entries,"
              " %llu filters built by the Rust adapter)\n",
              static_cast<unsigned long long>(pairs), static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(entries),
              static_cast<unsigned long long>(filters_created));
}

// A table whose last data block starts in a window far past the previous ones, and a table
// with a single entry: the edge cases of the filter block inside a table.
TEST(Table, EdgeCaseTablesAreIdentical) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::mt19937_64 rng(harness::seed() ^ 0xED6Eull);
  std::vector<KVs> cases;
  cases.push_back({{std::string(), std::string()}});              // one empty entry
  cases.push_back({{"a", std::string(100000, 'x')}, {"b", "y"}});  // one huge block, 48 windows
  KVs mixed;
  for (int i = 0; i < 50; i++) {
    mixed.emplace_back(std::string(1, static_cast<char>('a' + i / 26)) +
                           std::string(1, static_cast<char>('a' + i % 26)),
                       random_value(rng, (i % 10 == 0) ? 30000 : 10));
  }
  cases.push_back(mixed);
  uint64_t pairs = 0;
  for (const KVs& kvs : cases) {
    for (leveldb::CompressionType c : {leveldb::kNoCompression, leveldb::kSnappyCompression}) {
      std::unique_ptr<const leveldb::FilterPolicy> stock(leveldb::NewBloomFilterPolicy(10));
      RustFilterPolicy rust(10);
      ASSERT_TRUE(rust.ok());
      leveldb::Options options;
      options.block_size = 1024;
      options.compression = c;
      uint64_t sa = 0, sb = 0;
      options.filter_policy = stock.get();
      ASSERT_TRUE(write_table(dir.path + "/a.ldb", options, kvs, &sa).ok());
      options.filter_policy = &rust;
      ASSERT_TRUE(write_table(dir.path + "/b.ldb", options, kvs, &sb).ok());
      const std::string a = read_file(dir.path + "/a.ldb");
      const std::string b = read_file(dir.path + "/b.ldb");
      EXPECT_EQ(a.size(), b.size());
      EXPECT_TRUE(a == b) << "edge-case table " << pairs << " differs";
      verify_table(dir.path + "/a.ldb", a.size(), options, kvs, rng);
      leveldb::Env::Default()->RemoveFile(dir.path + "/a.ldb");
      leveldb::Env::Default()->RemoveFile(dir.path + "/b.ldb");
      pairs++;
    }
  }
  std::printf("[table] compared %llu edge-case table pairs\n",
              static_cast<unsigned long long>(pairs));
}

}  // namespace
