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
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <leveldb/c.h>
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "leveldb_bloom.h"
#include "support.h"

namespace harness {

using support::env_count;
using support::LevelDBLink;
using support::random_key;
using support::random_keys;
using support::RustPolicy;

// The oracle must be LevelDB's own Bloom policy (support::oracle_problem says why).
// Built with LEVELDB_BLOOM_STATIC_LEVELDB (scripts/cross links every program statically),
// LevelDB comes from its static archive whatever the suite links by default.
inline void expect_leveldb_is_the_oracle(LevelDBLink link) {
#ifdef LEVELDB_BLOOM_STATIC_LEVELDB
  link = LevelDBLink::kStaticArchive;
#endif
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

// The bits-per-key settings the comparison suites sweep: 0 to 64, 100 and 1000.
inline std::vector<int> bits_per_key_values() {
  std::vector<int> v;
  for (int b = 0; b <= 64; b++) v.push_back(b);
  v.push_back(100);
  v.push_back(1000);
  return v;
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

// "key" + 16 hex digits of a bijective mix of i. Scrambled on purpose: LevelDB's own Bloom
// filter has a false-positive rate near 11% (not 1%) when probing "user%08d"-style keys whose
// neighbours (differing only in the last digit) are in the filter, which would make bounds on
// "mostly no match" depend on the key format instead of on the filters.
inline std::string number_key(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  char buf[32];
  std::snprintf(buf, sizeof buf, "key%016llx", static_cast<unsigned long long>(z));
  return buf;
}

// "v<tag>:" and 10 to 10 + max_extra - 1 random letters.
inline std::string make_value(std::mt19937_64& rng, size_t max_extra, uint64_t tag) {
  std::string v = "v" + std::to_string(tag) + ":";
  const size_t n = 10 + rng() % max_extra;
  for (size_t i = 0; i < n; i++) v.push_back(static_cast<char>('a' + rng() % 26));
  return v;
}

// A database opened through LevelDB's C API with a filter policy; failures are gtest
// failures.
struct Db {
  leveldb_t* db = nullptr;
  leveldb_options_t* options = nullptr;
  leveldb_readoptions_t* ropts = nullptr;
  leveldb_writeoptions_t* wopts = nullptr;

  ~Db() { close(); }
  // Small memtables and files by default: many tables, flushes and compactions while
  // writing.
  bool open(const std::string& path, leveldb_filterpolicy_t* fp, bool create,
            size_t write_buffer_size = 512 << 10, size_t max_file_size = 1 << 20) {
    options = leveldb_options_create();
    leveldb_options_set_filter_policy(options, fp);
    leveldb_options_set_create_if_missing(options, create ? 1 : 0);
    leveldb_options_set_error_if_exists(options, create ? 1 : 0);
    leveldb_options_set_paranoid_checks(options, 1);
    leveldb_options_set_write_buffer_size(options, write_buffer_size);
    leveldb_options_set_max_file_size(options, max_file_size);
    // LEVELDB_BLOOM_DB_COMPRESSION=none writes blocks uncompressed: scripts/cross sets it
    // for s390x, whose Snappy does not round-trip under qemu-user 7.2 (stock LevelDB with no
    // filter policy loses keys there too); filters do not depend on compression.
    const char* compression = std::getenv("LEVELDB_BLOOM_DB_COMPRESSION");
    if (compression != nullptr && std::string(compression) == "none") {
      leveldb_options_set_compression(options, leveldb_no_compression);
    }
    ropts = leveldb_readoptions_create();
    leveldb_readoptions_set_verify_checksums(ropts, 1);
    wopts = leveldb_writeoptions_create();
    char* err = nullptr;
    db = leveldb_open(options, path.c_str(), &err);
    if (err != nullptr) {
      ADD_FAILURE() << "leveldb_open(" << path << "): " << err;
      leveldb_free(err);
      db = nullptr;
    }
    return db != nullptr;
  }
  void close() {
    if (db != nullptr) leveldb_close(db);
    db = nullptr;
    if (options != nullptr) leveldb_options_destroy(options);
    options = nullptr;
    if (ropts != nullptr) leveldb_readoptions_destroy(ropts);
    ropts = nullptr;
    if (wopts != nullptr) leveldb_writeoptions_destroy(wopts);
    wopts = nullptr;
  }
  void write(leveldb_writebatch_t* batch) {
    char* err = nullptr;
    leveldb_write(db, wopts, batch, &err);
    if (err != nullptr) {
      ADD_FAILURE() << "leveldb_write: " << err;
      leveldb_free(err);
    }
    leveldb_writebatch_clear(batch);
  }
  // Returns true and the value if found.
  bool get(const std::string& key, std::string* value) {
    char* err = nullptr;
    size_t len = 0;
    char* v = leveldb_get(db, ropts, key.data(), key.size(), &len, &err);
    if (err != nullptr) {
      ADD_FAILURE() << "leveldb_get(" << support::hex(key) << "): " << err;
      leveldb_free(err);
      return false;
    }
    if (v == nullptr) return false;
    value->assign(v, len);
    leveldb_free(v);
    return true;
  }
  // Whether a full scan returns exactly `model`, in order; each difference is a gtest
  // failure naming `what`.
  bool scan_equals(const std::map<std::string, std::string>& model, const std::string& what) {
    leveldb_iterator_t* it = leveldb_create_iterator(db, ropts);
    auto expect = model.begin();
    uint64_t scanned = 0;
    bool same = true;
    for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
      size_t kl = 0, vl = 0;
      const char* k = leveldb_iter_key(it, &kl);
      const char* val = leveldb_iter_value(it, &vl);
      if (expect == model.end() || std::string(k, kl) != expect->first ||
          std::string(val, vl) != expect->second) {
        ADD_FAILURE() << what << ": scan differs from the model at entry " << scanned;
        same = false;
        break;
      }
      ++expect;
      ++scanned;
    }
    char* err = nullptr;
    leveldb_iter_get_error(it, &err);
    if (err != nullptr) {
      ADD_FAILURE() << what << ": iterator: " << err;
      leveldb_free(err);
      same = false;
    }
    leveldb_iter_destroy(it);
    EXPECT_EQ(scanned, model.size()) << what;
    return same && scanned == model.size();
  }
  // Flushes the memtable and compacts the tables overlapping [begin, end].
  void compact(const std::string& begin, const std::string& end) {
    leveldb_compact_range(db, begin.data(), begin.size(), end.data(), end.size());
  }
};

// What a counting filter policy saw LevelDB do.
struct Counters {
  std::atomic<uint64_t> creates{0};      // create_filter calls
  std::atomic<uint64_t> keys_added{0};   // keys handed to create_filter
  std::atomic<uint64_t> queries{0};      // key_may_match calls
  std::atomic<uint64_t> no_match{0};     // ... that answered "no match"
  std::atomic<uint64_t> names{0};        // name calls
  std::atomic<bool> destroyed{false};    // the destructor callback ran

  void reset_queries() {
    queries = 0;
    no_match = 0;
  }
};

// Delegates to the Rust callbacks; `inner` is a leveldb_bloom_policy*.
// LevelDB's own Bloom policy (leveldb::NewBloomFilterPolicy(10), the oracle) behind counting
// C callbacks, so that LevelDB's reader can be seen consulting filters this library wrote.
struct CountingStock {
  std::unique_ptr<const leveldb::FilterPolicy> inner{leveldb::NewBloomFilterPolicy(10)};
  Counters c;

  // A LevelDB C API policy over this object (which must outlive it); its destructor
  // callback releases `inner` and sets c.destroyed.
  leveldb_filterpolicy_t* filter_policy() {
    return leveldb_filterpolicy_create(this, destroy, create_filter, key_may_match, name);
  }

 private:
  static void destroy(void* state) {
    auto* s = static_cast<CountingStock*>(state);
    s->inner.reset();
    s->c.destroyed = true;
  }
  static char* create_filter(void* state, const char* const* keys, const size_t* lens, int n,
                             size_t* filter_length) {
    auto* s = static_cast<CountingStock*>(state);
    s->c.creates++;
    s->c.keys_added += static_cast<uint64_t>(n);
    std::vector<leveldb::Slice> slices;
    for (int i = 0; i < n; i++) slices.emplace_back(keys[i], lens[i]);
    std::string dst;
    s->inner->CreateFilter(slices.data(), n, &dst);
    char* out = static_cast<char*>(std::malloc(dst.size() ? dst.size() : 1));
    if (!dst.empty()) std::memcpy(out, dst.data(), dst.size());
    *filter_length = dst.size();
    return out;
  }
  static uint8_t key_may_match(void* state, const char* key, size_t length, const char* filter,
                               size_t filter_length) {
    auto* s = static_cast<CountingStock*>(state);
    const bool r =
        s->inner->KeyMayMatch(leveldb::Slice(key, length), leveldb::Slice(filter, filter_length));
    s->c.queries++;
    if (!r) s->c.no_match++;
    return r ? 1 : 0;
  }
  static const char* name(void* state) {
    auto* s = static_cast<CountingStock*>(state);
    s->c.names++;
    return s->inner->Name();
  }
};

// A fresh directory in the system's temporary folder ($TMPDIR or /tmp; Windows: %TMP%) for
// one database, `path`; the database and the directory are destroyed with it. `dir` is empty
// when no directory could be made. Paths are joined with the system's separator: under wine,
// LevelDB renames files only in a path with a backslash.
struct TempDb {
  explicit TempDb(const std::string& name) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path base = fs::temp_directory_path(ec);
    if (ec) return;
    std::random_device random;
    for (int attempt = 0; attempt < 100; attempt++) {
      const fs::path d = base / ("leveldb_bloom_" + name + "_" + std::to_string(random()));
      if (fs::create_directory(d, ec)) {
        dir = d.string();
        path = (d / "db").string();
        return;
      }
    }
  }
  ~TempDb() {
    if (dir.empty()) return;
    leveldb_options_t* o = leveldb_options_create();
    char* err = nullptr;
    leveldb_destroy_db(o, path.c_str(), &err);
    if (err != nullptr) {
      ADD_FAILURE() << "leveldb_destroy_db: " << err;
      leveldb_free(err);
    }
    leveldb_options_destroy(o);
    std::error_code ec;
    std::filesystem::remove(dir, ec);
  }
  std::string dir, path;
};

}  // namespace harness

#endif  // LEVELDB_BLOOM_CPP_TESTS_HARNESS_H_
