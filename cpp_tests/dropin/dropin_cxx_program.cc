// An ordinary LevelDB program in C++: leveldb::DB with leveldb::NewBloomFilterPolicy(10).
// It knows nothing of leveldb-bloom (no header, no symbol); run_dropin_proof.cmake runs it
// stock, with LD_PRELOAD of the drop-in, and linked against the drop-in (shared and
// static), and compares what it prints and writes.
//
// Usage: dropin_cxx_program DB_DIR   (DB_DIR must not hold a database yet)
//
// The same workload as dropin_c_program.c (workload.h), through the C++ API.
//
// With DROPIN_WORKLOAD_LIBRARY defined it is a library instead (bundled/: a wrapper library
// over its own LevelDB): main is dropin_workload_main, and the host program makes the Bloom
// policies (dropin_host_new_policy). With DROPIN_WORKLOAD_PLUGIN it is a plugin with its
// LevelDB compiled in, which makes its own policies (bundled/reload_host.c).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include "workload.h"

#ifdef DROPIN_WORKLOAD_LIBRARY
extern "C" const void* dropin_host_new_policy(int bits_per_key);
extern "C" int dropin_workload_main(int argc, char** argv);
#define main dropin_workload_main
#define NEW_BLOOM_POLICY(b) static_cast<const leveldb::FilterPolicy*>(dropin_host_new_policy(b))
#elif defined(DROPIN_WORKLOAD_PLUGIN)
extern "C" int dropin_workload_main(int argc, char** argv);
#define main dropin_workload_main
#define NEW_BLOOM_POLICY(b) leveldb::NewBloomFilterPolicy(b)
#else
#define NEW_BLOOM_POLICY(b) leveldb::NewBloomFilterPolicy(b)
#endif

namespace {

unsigned long policies_created = 0;
unsigned long n_puts = 0;
unsigned long n_deletes = 0;

void check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "dropin_cxx_program: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

[[noreturn]] void fail(const char* what, uint32_t i) {
  std::fprintf(stderr, "dropin_cxx_program: %s (index %lu)\n", what, static_cast<unsigned long>(i));
  std::exit(1);
}

leveldb::Slice key_of(uint32_t i, char* buf) { return leveldb::Slice(buf, wl_key(i, buf)); }

void put(leveldb::DB* db, uint32_t i, uint32_t v) {
  char key[WL_KEY_MAX], value[WL_VALUE_MAX];
  check(db->Put(leveldb::WriteOptions(), key_of(i, key),
                leveldb::Slice(value, wl_value(i, v, value))),
        "put");
  n_puts++;
}

void del(leveldb::DB* db, uint32_t i) {
  char key[WL_KEY_MAX];
  check(db->Delete(leveldb::WriteOptions(), key_of(i, key)), "delete");
  n_deletes++;
}

// A database and the Bloom policy it was opened with (destroyed after the database).
struct OpenDB {
  std::unique_ptr<const leveldb::FilterPolicy> policy;
  std::unique_ptr<leveldb::DB> db;
};

OpenDB open_db(const std::string& dir, bool create) {
  OpenDB o;
  o.policy.reset(NEW_BLOOM_POLICY(WL_BITS_PER_KEY));
  policies_created++;
  leveldb::Options options;
  options.filter_policy = o.policy.get();
  options.create_if_missing = create;
  options.error_if_exists = create;
  options.write_buffer_size = WL_WRITE_BUFFER_SIZE;
  leveldb::DB* db = nullptr;
  check(leveldb::DB::Open(options, dir, &db), "open");
  o.db.reset(db);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DB_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];

  {  // Phase 1.
    OpenDB o = open_db(dir, true);
    for (uint32_t i = 0; i < WL_PHASE1_KEYS; i++) put(o.db.get(), i, 1);
    for (uint32_t i = 0; i < WL_PHASE1_KEYS; i += 3) put(o.db.get(), i, 2);
    for (uint32_t i = 5; i < WL_PHASE1_KEYS; i += 10) del(o.db.get(), i);
    o.db->CompactRange(nullptr, nullptr);
    o.db.reset();  // before the policy
  }

  OpenDB o = open_db(dir, false);  // Phase 2.
  leveldb::DB* db = o.db.get();
  for (uint32_t i = WL_PHASE1_KEYS; i < WL_KEYS; i++) put(db, i, 1);
  for (uint32_t i = 0; i < WL_KEYS; i += 7) put(db, i, 3);
  for (uint32_t i = 6; i < WL_KEYS; i += 13) del(db, i);
  db->CompactRange(nullptr, nullptr);

  unsigned long live = 0, found = 0, deleted_lookups = 0, pairs = 0;
  char key[WL_KEY_MAX], value[WL_VALUE_MAX];
  std::string got;
  for (uint32_t i = 0; i < WL_KEYS; i++) {  // Every key, present or deleted.
    const uint32_t v = wl_final_version(i);
    const leveldb::Status s = db->Get(leveldb::ReadOptions(), key_of(i, key), &got);
    if (!s.ok() && !s.IsNotFound()) check(s, "get");
    if (v == 0) {
      deleted_lookups++;
      if (s.ok()) fail("deleted key found", i);
    } else {
      live++;
      if (!s.ok()) fail("key not found", i);
      if (leveldb::Slice(got) != leveldb::Slice(value, wl_value(i, v, value))) {
        fail("wrong value", i);
      }
      found++;
    }
  }
  for (uint32_t j = 0; j < WL_ABSENT_LOOKUPS; j++) {  // Keys never written.
    const leveldb::Status s =
        db->Get(leveldb::ReadOptions(), leveldb::Slice(key, wl_absent_key(j, key)), &got);
    if (s.ok()) fail("absent key found", j);
    if (!s.IsNotFound()) check(s, "get");
  }
  uint64_t digest = WL_FNV_INIT;
  {  // The whole database, in order.
    std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      digest = wl_fnv(digest, it->key().data(), it->key().size());
      digest = wl_fnv(digest, it->value().data(), it->value().size());
      pairs++;
    }
    check(it->status(), "iterator");
  }
  if (pairs != live) fail("iteration count differs from the live keys", static_cast<uint32_t>(pairs));
  o.db.reset();
  o.policy.reset();

  std::printf("bloom_policies_created=%lu\n", policies_created);
  std::printf("keys=%lu\n", static_cast<unsigned long>(WL_KEYS));
  std::printf("puts=%lu\n", n_puts);
  std::printf("deletes=%lu\n", n_deletes);
  std::printf("live_keys=%lu\n", live);
  std::printf("present_lookups=%lu\n", found);
  std::printf("absent_lookups=%lu\n", deleted_lookups + static_cast<unsigned long>(WL_ABSENT_LOOKUPS));
  std::printf("pairs=%lu\n", pairs);
  std::printf("digest=%016llx\n", static_cast<unsigned long long>(digest));
  return 0;
}
