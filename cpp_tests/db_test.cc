// A whole database through LevelDB's C API (leveldb/c.h): tables written with the Rust
// callbacks (leveldb_bloom_cb_*) read back with LevelDB's own Bloom policy and the reverse.
// Counting wrappers around the filter policies prove that the filters are consulted and that
// they reject absent keys.
//
// Environment: LEVELDB_BLOOM_SEED (random seed), LEVELDB_BLOOM_DB_KEYS (keys written,
// default 100000), LEVELDB_BLOOM_DB_ABSENT (absent keys probed, default 100000).

#include <dirent.h>
#include <stdlib.h>  // mkdtemp
#include <unistd.h>  // rmdir

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "leveldb/c.h"
#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"
#include "leveldb_bloom.h"

namespace {

// ---------------------------------------------------------------------------
// Counting filter policies (C-style state + callbacks for leveldb_filterpolicy_create).
// ---------------------------------------------------------------------------

struct CountingRust {
  leveldb_bloom_policy* inner;
  harness::Counters c;
};

void rust_destructor(void* state) {
  auto* s = static_cast<CountingRust*>(state);
  leveldb_bloom_cb_destructor(s->inner);  // destroys the Rust policy
  s->inner = nullptr;
  s->c.destroyed = true;
}

char* rust_create_filter(void* state, const char* const* keys, const size_t* lens, int n,
                         size_t* filter_length) {
  auto* s = static_cast<CountingRust*>(state);
  s->c.creates++;
  s->c.keys_added += static_cast<uint64_t>(n);
  return leveldb_bloom_cb_create_filter(s->inner, keys, lens, n, filter_length);
}

uint8_t rust_key_may_match(void* state, const char* key, size_t length, const char* filter,
                           size_t filter_length) {
  auto* s = static_cast<CountingRust*>(state);
  const uint8_t r = leveldb_bloom_cb_key_may_match(s->inner, key, length, filter, filter_length);
  s->c.queries++;
  if (r == 0) s->c.no_match++;
  return r;
}

const char* rust_name(void* state) {
  auto* s = static_cast<CountingRust*>(state);
  s->c.names++;
  return leveldb_bloom_cb_name(s->inner);
}


// ---------------------------------------------------------------------------
// Which filter policy a DB is opened with.
// ---------------------------------------------------------------------------

enum class Policy {
  // leveldb_filterpolicy_create(leveldb_bloom_policy_create(10), leveldb_bloom_cb_*...)
  kRust,
  kStock,          // leveldb_filterpolicy_create_bloom(10)
  kCountingRust,   // CountingRust around leveldb_bloom_policy_create(10)
  kCountingStock,  // CountingStock around leveldb::NewBloomFilterPolicy(10)
};

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kRust: return "Rust callbacks";
    case Policy::kStock: return "leveldb_filterpolicy_create_bloom";
    case Policy::kCountingRust: return "counting Rust callbacks";
    case Policy::kCountingStock: return "counting LevelDB bloom";
  }
  return "?";
}

// Owns a leveldb_filterpolicy_t and the counters behind it.
struct FilterPolicyHandle {
  explicit FilterPolicyHandle(Policy p) : kind(p) {
    switch (p) {
      case Policy::kRust: {
        leveldb_bloom_policy* rp = leveldb_bloom_policy_create(10);
        EXPECT_NE(rp, nullptr);
        fp = leveldb_filterpolicy_create(rp, leveldb_bloom_cb_destructor,
                                         leveldb_bloom_cb_create_filter,
                                         leveldb_bloom_cb_key_may_match, leveldb_bloom_cb_name);
        break;
      }
      case Policy::kStock:
        fp = leveldb_filterpolicy_create_bloom(10);
        break;
      case Policy::kCountingRust:
        rust.reset(new CountingRust{leveldb_bloom_policy_create(10), {}});
        EXPECT_NE(rust->inner, nullptr);
        fp = leveldb_filterpolicy_create(rust.get(), rust_destructor, rust_create_filter,
                                         rust_key_may_match, rust_name);
        break;
      case Policy::kCountingStock:
        stock.reset(new harness::CountingStock);
        fp = stock->filter_policy();
        break;
    }
  }
  // Only after every DB using it is closed: LevelDB does not own the policy.
  void destroy() {
    if (fp != nullptr) leveldb_filterpolicy_destroy(fp);
    fp = nullptr;
    if (counters() != nullptr) {
      EXPECT_TRUE(counters()->destroyed.load());
    }
  }
  ~FilterPolicyHandle() { destroy(); }
  harness::Counters* counters() {
    if (rust) return &rust->c;
    if (stock) return &stock->c;
    return nullptr;
  }

  Policy kind;
  leveldb_filterpolicy_t* fp = nullptr;
  std::unique_ptr<CountingRust> rust;
  std::unique_ptr<harness::CountingStock> stock;
};

// ---------------------------------------------------------------------------
// The workload and its model.
// ---------------------------------------------------------------------------

struct Model {
  std::map<std::string, std::string> live;
  std::vector<std::string> deleted;  // deleted and not written again
  std::vector<std::string> absent;   // never written
  uint64_t puts = 0, overwrites = 0, deletes = 0;
};


// Writes the workload into a fresh DB at `path` and returns the model of its contents.
Model write_db(const std::string& path, leveldb_filterpolicy_t* fp) {
  Model m;
  std::mt19937_64 rng(harness::seed() ^ 0xDBull);
  const uint64_t n = harness::env_count("LEVELDB_BLOOM_DB_KEYS", 100000);
  const uint64_t n_absent = harness::env_count("LEVELDB_BLOOM_DB_ABSENT", 100000);
  harness::Db db;
  if (!db.open(path, fp, true)) return m;
  leveldb_writebatch_t* batch = leveldb_writebatch_create();
  uint64_t in_batch = 0;
  auto put = [&](const std::string& k, const std::string& v) {
    leveldb_writebatch_put(batch, k.data(), k.size(), v.data(), v.size());
    m.live[k] = v;
    if (++in_batch == 1000) {
      db.write(batch);
      in_batch = 0;
    }
  };
  auto del = [&](const std::string& k) {
    leveldb_writebatch_delete(batch, k.data(), k.size());
    m.live.erase(k);
    if (++in_batch == 1000) {
      db.write(batch);
      in_batch = 0;
    }
  };

  // Keys: 90% harness::number_key(even number) (odd numbers give absent keys), 10% random bytes
  // with at least one byte >= 0x80, the empty key and a few long keys.
  std::vector<std::string> keys;
  keys.push_back(std::string());
  for (size_t len : {300u, 1000u, 10000u, 65536u}) {
    std::string k;
    while (k.size() < len) k.push_back(static_cast<char>(rng() & 0xff));
    keys.push_back(k);
  }
  const uint64_t numbered = n - n / 10;
  for (uint64_t i = 0; i < numbered; i++) keys.push_back(harness::number_key(2 * i));
  while (keys.size() < n) {
    std::string k = harness::random_key(rng, 24);
    if (k.empty()) continue;
    k[rng() % k.size()] |= static_cast<char>(0x80);
    keys.push_back(k);
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t i = 0; i < keys.size(); i++) {
    put(keys[i], harness::make_value(rng, 90, i));
    m.puts++;
  }
  // Overwrites and deletions (some deleted keys come back later).
  for (uint64_t i = 0; i < n / 10; i++) {
    put(keys[rng() % keys.size()], harness::make_value(rng, 90, n + i));
    m.overwrites++;
  }
  std::vector<std::string> deleted;
  for (uint64_t i = 0; i < n / 10; i++) {
    const std::string& k = keys[rng() % keys.size()];
    del(k);
    deleted.push_back(k);
    m.deletes++;
  }
  for (uint64_t i = 0; i < n / 100; i++) put(deleted[rng() % deleted.size()], harness::make_value(rng, 90, i));
  if (in_batch > 0) db.write(batch);
  leveldb_writebatch_destroy(batch);
  for (const std::string& k : deleted) {
    if (m.live.count(k) == 0) m.deleted.push_back(k);
  }

  const std::unordered_set<std::string> written(keys.begin(), keys.end());
  // Absent keys: 60% harness::number_key(odd number) (inside the files' key ranges, so that the filters
  // are asked), the rest random keys.
  while (m.absent.size() < n_absent) {
    std::string k = (rng() % 10 < 6) ? harness::number_key(2 * (rng() % numbered) + 1)
                                     : harness::random_key(rng, 24);
    if (written.count(k) == 0) m.absent.push_back(k);
  }

  leveldb_compact_range(db.db, nullptr, 0, nullptr, 0);
  db.close();
  return m;
}

struct ReadStats {
  uint64_t live = 0, deleted = 0, absent = 0;
};

// Reopens the DB with `fp` and checks every live, deleted and absent key. If `counters` is
// given, checks that the filters were consulted for absent keys and rejected most of them.
ReadStats verify_db(const std::string& path, leveldb_filterpolicy_t* fp, const Model& m,
                    harness::Counters* counters, const char* what) {
  ReadStats st;
  harness::Db db;
  if (!db.open(path, fp, false)) return st;
  std::string v;
  uint64_t bad = 0;
  for (const auto& kv : m.live) {
    const bool found = db.get(kv.first, &v);
    if ((!found || v != kv.second) && ++bad <= 5) {
      ADD_FAILURE() << what << ": live key " << harness::to_hex(kv.first.substr(0, 64)) << " ("
                    << kv.first.size() << " bytes) " << (found ? "has a wrong value" : "not found");
    }
    st.live++;
  }
  for (const std::string& k : m.deleted) {
    if (db.get(k, &v) && ++bad <= 5) {
      ADD_FAILURE() << what << ": deleted key " << harness::to_hex(k.substr(0, 64)) << " found";
    }
    st.deleted++;
  }
  if (counters != nullptr) counters->reset_queries();
  for (const std::string& k : m.absent) {
    if (db.get(k, &v) && ++bad <= 5) {
      ADD_FAILURE() << what << ": absent key " << harness::to_hex(k) << " found";
    }
    st.absent++;
  }
  EXPECT_EQ(bad, 0u) << what;
  if (counters != nullptr) {
    const uint64_t q = counters->queries.load(), no = counters->no_match.load();
    std::printf("[db] %s: %llu filter queries for %llu absent keys, %llu answered no match"
                " (%.2f%%)\n",
                what, static_cast<unsigned long long>(q),
                static_cast<unsigned long long>(st.absent), static_cast<unsigned long long>(no),
                q ? 100.0 * static_cast<double>(no) / static_cast<double>(q) : 0.0);
    // 60% of the absent keys lie inside the files' key ranges, so the filters must be asked
    // for at least half of them; with 10 bits per key about 1% of the answers are false
    // positives, so at least 90% must be "no match".
    EXPECT_GE(q, st.absent / 2) << what << ": the filters were not consulted";
    EXPECT_GE(static_cast<double>(no), 0.9 * static_cast<double>(q)) << what;
  }
  // A full scan returns exactly the model.
  db.scan_equals(m.live, what);
  db.close();
  return st;
}

size_t count_tables(const std::string& path) {
  size_t n = 0;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".ldb") == 0) n++;
    }
    closedir(d);
  }
  return n;
}


// Writes with `writer`, then reads back with each of `readers`.
void round_trip(Policy writer, const std::vector<Policy>& readers) {
  harness::TempDb tmp("db");
  ASSERT_FALSE(tmp.dir.empty()) << "no temporary directory";
  Model m;
  {
    FilterPolicyHandle w(writer);
    ASSERT_NE(w.fp, nullptr);
    m = write_db(tmp.path, w.fp);
    if (harness::Counters* c = w.counters()) {
      EXPECT_GT(c->creates.load(), 0u);
      EXPECT_GE(c->keys_added.load(), m.puts);  // every entry of every table counts
      EXPECT_GT(c->names.load(), 0u);
    }
    w.destroy();  // the DB is closed
  }
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  ASSERT_GT(m.live.size(), 0u);
  std::printf("[db] wrote with %s: %llu puts, %llu overwrites, %llu deletes -> %zu live keys,"
              " %zu deleted keys, %zu tables after compaction\n",
              policy_name(writer), static_cast<unsigned long long>(m.puts),
              static_cast<unsigned long long>(m.overwrites),
              static_cast<unsigned long long>(m.deletes), m.live.size(), m.deleted.size(),
              count_tables(tmp.path));
  for (Policy reader : readers) {
    FilterPolicyHandle r(reader);
    ASSERT_NE(r.fp, nullptr);
    const std::string what =
        std::string("written with ") + policy_name(writer) + ", read with " + policy_name(reader);
    const ReadStats st = verify_db(tmp.path, r.fp, m, r.counters(), what.c_str());
    if (harness::Counters* c = r.counters()) {
      EXPECT_GT(c->names.load(), 0u);
    }
    r.destroy();
    std::printf("[db] %s: %llu live keys found, %llu deleted and %llu absent keys not found\n",
                what.c_str(), static_cast<unsigned long long>(st.live),
                static_cast<unsigned long long>(st.deleted),
                static_cast<unsigned long long>(st.absent));
  }
}

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(DbOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kSharedLibrary);
}

TEST(Db, RustCallbacksWriteLevelDBBloomReads) {
  round_trip(Policy::kRust, {Policy::kStock, Policy::kCountingStock, Policy::kCountingRust});
}

TEST(Db, LevelDBBloomWritesRustCallbacksRead) {
  round_trip(Policy::kStock, {Policy::kRust, Policy::kCountingRust});
}

// The counting wrapper on the write side too: the Rust create_filter callback builds every
// filter of every table, and LevelDB's reader consults them.
TEST(Db, CountingRustWritesCountingLevelDBReads) {
  round_trip(Policy::kCountingRust, {Policy::kCountingStock});
}

}  // namespace
