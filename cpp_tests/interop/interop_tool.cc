// The interop matrix's one tool: writes and reads LevelDB databases, and writes single
// tables, with one of three Bloom filter policies, all claiming "leveldb.BuiltinBloomFilter2":
//
//   stock      leveldb::NewBloomFilterPolicy(10), from libleveldb itself;
//   callbacks  leveldb_filterpolicy_create() over leveldb_bloom_policy_create(10) and the
//              four leveldb_bloom_cb_* callbacks (LevelDB's C API wrapper, our library);
//   dropin     leveldb::NewBloomFilterPolicy(10) with libleveldb_bloom_dropin.so in
//              LD_PRELOAD, so that the call lands in the drop-in;
//   dropin_compact  the same with LEVELDB_BLOOM_FORMAT=compact: the drop-in builds compact
//              filters (a stock reader answers them "may match" and reads unfiltered).
//
// Usage:
//   interop_tool write POLICY DB_DIR KEYS SEED   new database holding KEYS keys, compacted
//   interop_tool read  POLICY DB_DIR KEYS SEED [compact]
//                                                every key and value, the deleted keys, KEYS/5
//                                                keys never written, a full scan; "compact":
//                                                the database's filters are compact, so a
//                                                Bloom policy must reject nothing
//   interop_tool table POLICY FILE               one table via leveldb::TableBuilder
//
// Environment: LEVELDB_BLOOM_INTEROP_MAX_KEYS caps KEYS (write and read alike, so a matrix
// run with it set stays consistent; scripts/instrumented valgrind shrinks the 1,000,000-key database so).
//
// Before anything else the tool proves which policy it really runs: where
// leveldb::NewBloomFilterPolicy resolves (dladdr: libleveldb for stock and callbacks, the
// drop-in for dropin), the dynamic type of the policy object and the library its type_info
// lives in, and where the leveldb_bloom C API resolves. Without that, a missing LD_PRELOAD
// would silently test stock against stock. After the work it checks the leveldb-bloom
// statistics of the policy in use (none for stock: there ours must have counted nothing).
//
// Keys (for KEYS = n and SEED = s): index 0 is the empty key; every other index is 4 bytes
// of a bijective scramble of (index, seed), so keys are unique, and 0..11 pseudo-random tail
// bytes (>= 0x80 included); indices 7, n/2+1 and n-3 carry a 1 MiB tail instead. Indices
// 0..n-1 end up live (i % 7 == 0 overwritten, i % 13 == 5 deleted and put again); indices
// n..n+n/10-1 are put and deleted. Absent lookups: the deleted keys, n/5 keys never written
// (half with unused prefixes, half a live key plus the suffix 80 ff), and each 1 MiB key
// plus one byte.

#include <dlfcn.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <typeinfo>
#include <vector>

#include <leveldb/c.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>
#include <leveldb/write_batch.h>

#include "leveldb_bloom.h"
#include "support.h"

namespace {

constexpr int kBitsPerKey = 10;
constexpr size_t kBigTail = size_t{1} << 20;
constexpr char kLevelDBBloomType[] = "N7leveldb12_GLOBAL__N_117BloomFilterPolicyE";
constexpr char kCApiPolicyType[] = "22leveldb_filterpolicy_t";

[[noreturn]] void die(const char* fmt, const std::string& a = "", const std::string& b = "") {
  std::fprintf(stderr, "interop_tool: ");
  std::fprintf(stderr, fmt, a.c_str(), b.c_str());
  std::fprintf(stderr, "\n");
  std::exit(1);
}

void check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) die("%s: %s", what, s.ToString());
}

// ---------------------------------------------------------------------------
// Which code runs.
// ---------------------------------------------------------------------------

enum class Mode { kStock, kCallbacks, kDropIn, kDropInCompact };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kStock: return "stock";
    case Mode::kCallbacks: return "callbacks";
    case Mode::kDropIn: return "dropin";
    case Mode::kDropInCompact: return "dropin_compact";
  }
  return "?";
}

bool is_dropin(Mode m) { return m == Mode::kDropIn || m == Mode::kDropInCompact; }

// The file of the loaded object that holds `addr`.
std::string object_of(const void* addr) {
  Dl_info info;
  if (dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return "(unknown)";
  return info.dli_fname;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The Bloom policy of one mode, and what it counts.
class Policy {
 public:
  explicit Policy(Mode mode) : mode_(mode) {
    // Where the C++ entry point resolves: the drop-in only in dropin mode.
    const std::string nbfp = object_of(reinterpret_cast<const void*>(&leveldb::NewBloomFilterPolicy));
    const bool nbfp_is_dropin = contains(nbfp, "libleveldb_bloom_dropin");
    const bool nbfp_is_leveldb = contains(nbfp, "libleveldb.so") && !contains(nbfp, "leveldb_bloom");
    if (is_dropin(mode) ? !nbfp_is_dropin : !nbfp_is_leveldb) {
      die("leveldb::NewBloomFilterPolicy resolves to %s, wrong for this mode (%s)", nbfp,
          mode_name(mode));
    }
    // Where the leveldb_bloom C API resolves: the drop-in (preloaded, it comes first) in
    // dropin mode, else libleveldb_bloom.so.
    const std::string capi = object_of(reinterpret_cast<const void*>(&leveldb_bloom_global_stats));
    if (is_dropin(mode) ? !contains(capi, "libleveldb_bloom_dropin")
                        : !contains(capi, "libleveldb_bloom.so")) {
      die("leveldb_bloom_global_stats resolves to %s, wrong for this mode (%s)", capi,
          mode_name(mode));
    }
    leveldb_bloom_global_stats_reset();

    std::string type;
    if (mode == Mode::kCallbacks) {
      state_ = support::counted(leveldb_bloom_policy_create(kBitsPerKey));
      if (state_ == nullptr) die("leveldb_bloom_policy_create failed");
      c_policy_ = leveldb_filterpolicy_create(state_, leveldb_bloom_cb_destructor,
                                              leveldb_bloom_cb_create_filter,
                                              leveldb_bloom_cb_key_may_match, leveldb_bloom_cb_name);
      // db/c.cc: struct leveldb_filterpolicy_t : public leveldb::FilterPolicy, its only
      // base; the C API's object is LevelDB's C++ policy. Its dynamic type confirms the cast.
      policy_ = reinterpret_cast<const leveldb::FilterPolicy*>(c_policy_);
      type = support::dynamic_type_name(policy_);
      if (type != kCApiPolicyType) die("C API policy has dynamic type %s", type);
    } else {
      owned_.reset(leveldb::NewBloomFilterPolicy(kBitsPerKey));
      policy_ = owned_.get();
      // The class is told by its vtable's home and its type info, which the drop-in's
      // class, compiled without RTTI, does not have; compact filters come in LevelDB's own
      // C wrapper over the drop-in's callbacks (the format check below tells which).
      type = support::dynamic_type_name(policy_);
      const std::string vtable_home = object_of(*reinterpret_cast<void* const*>(policy_));
      if (mode == Mode::kStock && type != kLevelDBBloomType) {
        die("stock policy has dynamic type %s (vtable in %s)", type, vtable_home);
      }
      const bool dropin_object = type.empty() && contains(vtable_home, "libleveldb_bloom_dropin");
      if (is_dropin(mode) && !dropin_object && type != kCApiPolicyType) {
        die("drop-in policy has dynamic type '%s' (vtable in %s)", type, vtable_home);
      }
      if (is_dropin(mode)) {
        // The drop-in counts its work only for a statistics file.
        const char* stats_file = std::getenv("LEVELDB_BLOOM_STATS_FILE");
        if (stats_file == nullptr || *stats_file == '\0') {
          die("dropin mode needs LEVELDB_BLOOM_STATS_FILE, or the drop-in counts nothing");
        }
        // The drop-in's own count of NewBloomFilterPolicy calls it served.
        using Count = uint64_t (*)();
        auto created =
            reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "leveldb_bloom_dropin_policies_created"));
        if (created == nullptr || created() != 1) die("the drop-in did not serve the policy");
      }
    }
    if (std::strcmp(policy_->Name(), "leveldb.BuiltinBloomFilter2") != 0) {
      die("policy name %s", policy_->Name());
    }
    if (is_dropin(mode)) {
      // Which format the drop-in builds; the work it counts is then forgotten again.
      const bool compact = support::builds_compact_filters(policy_);
      if (compact != (mode == Mode::kDropInCompact)) {
        die("the drop-in builds %s filters, wrong for this mode (%s)",
            compact ? "compact" : "Bloom", mode_name(mode));
      }
      leveldb_bloom_global_stats_reset();
    }
    std::printf("mode=%s NewBloomFilterPolicy=%s policy_type=%s\n", mode_name(mode), nbfp.c_str(),
                type.c_str());
  }

  ~Policy() {
    owned_.reset();
    if (c_policy_ != nullptr) leveldb_filterpolicy_destroy(c_policy_);  // destroys state_
  }
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  const leveldb::FilterPolicy* get() const { return policy_; }
  Mode mode() const { return mode_; }

  // What leveldb-bloom counted: the counted policy's own counts for callbacks, the
  // process-wide counts (the drop-in's, kept because LEVELDB_BLOOM_STATS_FILE is set) for
  // dropin, and for stock the process-wide counts of
  // libleveldb_bloom.so, which must stay zero.
  leveldb_bloom_stats stats() const {
    leveldb_bloom_stats s{};
    const int rc = mode_ == Mode::kCallbacks ? leveldb_bloom_policy_stats(state_, &s)
                                             : leveldb_bloom_global_stats(&s);
    if (rc != LEVELDB_BLOOM_OK) die("statistics: %s", leveldb_bloom_status_message(rc));
    std::printf("stats filters_built=%" PRIu64 " keys_added=%" PRIu64 " queries=%" PRIu64
                " no_match=%" PRIu64 "\n",
                s.filters_built, s.keys_added, s.queries, s.no_match);
    if (mode_ == Mode::kStock &&
        (s.filters_built != 0 || s.keys_added != 0 || s.queries != 0 || s.no_match != 0)) {
      die("leveldb-bloom counted work in stock mode");
    }
    return s;
  }

 private:
  Mode mode_;
  std::unique_ptr<const leveldb::FilterPolicy> owned_;
  leveldb_bloom_policy* state_ = nullptr;
  leveldb_filterpolicy_t* c_policy_ = nullptr;
  const leveldb::FilterPolicy* policy_ = nullptr;
};

// ---------------------------------------------------------------------------
// The workload.
// ---------------------------------------------------------------------------

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Workload {
 public:
  Workload(uint64_t n, uint64_t seed) : n_(n), seed_(seed) {
    if (n < 100 || n > (uint64_t{1} << 30)) die("KEYS must be in 100..2^30");
    big_ = {7, n / 2 + 1, n - 3};
  }

  uint64_t live() const { return n_; }
  uint64_t dead_end() const { return n_ + n_ / 10; }  // dead indices: live()..dead_end()-1
  uint64_t never_written() const { return n_ / 5; }
  const std::vector<uint64_t>& big() const { return big_; }

  std::string key(uint64_t i) const {
    std::string k;
    if (i == 0) return k;
    // A bijection of 32-bit integers, keyed by the seed: unique 4-byte prefixes.
    uint32_t x = static_cast<uint32_t>(i) * 0x9e3779b1u ^ static_cast<uint32_t>(seed_);
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    for (int s = 24; s >= 0; s -= 8) k.push_back(static_cast<char>(x >> s));
    uint64_t r = mix64(i ^ (seed_ << 32));
    const bool is_big = std::find(big_.begin(), big_.end(), i) != big_.end();
    const size_t tail = is_big ? kBigTail : static_cast<size_t>(r % 12);
    for (size_t j = 0; j < tail; j++) {
      if (j % 8 == 0) r = mix64(r);
      k.push_back(static_cast<char>(r >> (8 * (j % 8))));
    }
    return k;
  }

  // Absent key j, for j < never_written().
  std::string absent_key(uint64_t j) const {
    if (j % 2 == 0) return key(dead_end() + j);
    return key((j / 2) % n_) + "\x80\xff";
  }

  std::string value(uint64_t i, uint32_t version) const {
    uint64_t r = mix64((i << 2 | version) ^ seed_);
    std::string v(static_cast<size_t>(r % 48), '\0');
    for (size_t j = 0; j < v.size(); j++) {
      if (j % 8 == 0) r = mix64(r);
      v[j] = static_cast<char>(r >> (8 * (j % 8)));
    }
    return v;
  }

  // The version a reader must find for a live index.
  static uint32_t final_version(uint64_t i) { return i % 13 == 5 ? 3 : i % 7 == 0 ? 2 : 1; }

 private:
  uint64_t n_, seed_;
  std::vector<uint64_t> big_;
};

// ---------------------------------------------------------------------------
// Subcommands.
// ---------------------------------------------------------------------------

std::set<std::string> table_files(const std::string& dir) {
  std::vector<std::string> names;
  check(leveldb::Env::Default()->GetChildren(dir, &names), "list database");
  std::set<std::string> tables;
  for (const std::string& n : names) {
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".ldb") == 0) tables.insert(n);
  }
  return tables;
}

std::unique_ptr<leveldb::DB> open_db(const Policy& policy, const std::string& dir, bool create) {
  leveldb::Options options;
  options.filter_policy = policy.get();
  options.create_if_missing = create;
  options.error_if_exists = create;
  leveldb::DB* db = nullptr;
  check(leveldb::DB::Open(options, dir, &db), "open");
  return std::unique_ptr<leveldb::DB>(db);
}

int cmd_write(const Policy& policy, const std::string& dir, const Workload& w) {
  leveldb::Options destroy_options;
  leveldb::DestroyDB(dir, destroy_options);  // a leftover from an earlier run
  std::unique_ptr<leveldb::DB> db = open_db(policy, dir, true);
  uint64_t ops = 0;
  leveldb::WriteBatch batch;
  auto flush = [&] {
    check(db->Write(leveldb::WriteOptions(), &batch), "write");
    batch.Clear();
  };
  auto put = [&](uint64_t i, uint32_t v) {
    batch.Put(w.key(i), w.value(i, v));
    if (++ops % 1000 == 0) flush();
  };
  auto del = [&](uint64_t i) {
    batch.Delete(w.key(i));
    if (++ops % 1000 == 0) flush();
  };
  for (uint64_t i = 0; i < w.dead_end(); i++) put(i, 1);
  for (uint64_t i = 0; i < w.live(); i += 7) put(i, 2);
  for (uint64_t i = 5; i < w.live(); i += 13) del(i);
  for (uint64_t i = w.live(); i < w.dead_end(); i++) del(i);
  for (uint64_t i = 5; i < w.live(); i += 13) put(i, 3);
  flush();
  // Everything into one level without overlap: a reader's lookups then never consult two
  // tables, so they trigger no seek compaction, and with no compaction pending every table
  // a reader sees is one this writer's policy built.
  db->CompactRange(nullptr, nullptr);
  std::string levels;
  int levels_with_files = 0;
  for (int level = 0; level < 7; level++) {
    std::string files;
    db->GetProperty("leveldb.num-files-at-level" + std::to_string(level), &files);
    levels += (level ? "," : "") + files;
    if (files != "0") levels_with_files++;
  }
  db.reset();
  if (levels_with_files != 1) die("after CompactRange, files per level: %s", levels);

  const std::set<std::string> tables = table_files(dir);
  std::printf("write: ops=%" PRIu64 " live_keys=%" PRIu64 " tables=%zu files_per_level=%s\n",
              ops, w.live(), tables.size(), levels.c_str());
  const leveldb_bloom_stats s = policy.stats();
  // Every write passed through a memtable flushed into a table with a filter.
  if (policy.mode() != Mode::kStock && (s.filters_built == 0 || s.keys_added < ops)) {
    die("too few filters or keys counted");
  }
  return 0;
}

int cmd_read(const Policy& policy, const std::string& dir, const Workload& w,
             bool compact_filters) {
  const std::set<std::string> tables_before = table_files(dir);
  std::unique_ptr<leveldb::DB> db = open_db(policy, dir, false);
  const leveldb::ReadOptions ro;
  std::string got;
  uint64_t present = 0, absent = 0;
  for (uint64_t i = 0; i < w.live(); i++) {
    const leveldb::Status s = db->Get(ro, w.key(i), &got);
    if (s.IsNotFound()) die("key %s not found", std::to_string(i));
    check(s, "get");
    if (got != w.value(i, Workload::final_version(i))) die("key %s: wrong value", std::to_string(i));
    present++;
  }
  auto expect_absent = [&](const std::string& key, const char* what, uint64_t i) {
    const leveldb::Status s = db->Get(ro, key, &got);
    if (s.ok()) die("%s %s found", what, std::to_string(i));
    if (!s.IsNotFound()) check(s, "get");
    absent++;
  };
  for (uint64_t i = w.live(); i < w.dead_end(); i++) expect_absent(w.key(i), "deleted key", i);
  for (uint64_t j = 0; j < w.never_written(); j++) expect_absent(w.absent_key(j), "absent key", j);
  for (uint64_t i : w.big()) expect_absent(w.key(i) + "\x80", "1 MiB absent key", i);

  uint64_t pairs = 0;
  {
    std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
    for (it->SeekToFirst(); it->Valid(); it->Next()) pairs++;
    check(it->status(), "iterator");
  }
  if (pairs != w.live()) die("scan found %s pairs, expected %s", std::to_string(pairs),
                             std::to_string(w.live()));
  db.reset();
  if (table_files(dir) != tables_before) die("the reader wrote tables (a compaction ran)");

  std::printf("read: present=%" PRIu64 " absent=%" PRIu64 " pairs=%" PRIu64 " tables=%zu\n",
              present, absent, pairs, tables_before.size());
  const leveldb_bloom_stats s = policy.stats();
  if (policy.mode() != Mode::kStock) {
    // One level without overlap: each lookup asks exactly one filter if its key is inside a
    // table's range; at 10 bits per key about 99% of absent keys are rejected. A Bloom
    // policy answers compact filters as LevelDB does: "may match", every one.
    if (s.queries < present) die("fewer filter queries than present lookups");
    if (compact_filters && policy.mode() != Mode::kDropInCompact) {
      if (s.no_match != 0) die("a Bloom policy rejected keys by compact filters");
    } else if (s.no_match * 10 < absent * 9) {
      die("fewer than 90%% of absent lookups rejected");
    }
    if (s.no_match > absent) die("more rejections than absent lookups");
  }
  return 0;
}

int cmd_table(const Policy& policy, const std::string& path) {
  // 20,000 distinct keys of the workload shape (empty key, high bytes, one 1 MiB key), in
  // order, with fixed values: a deterministic table.
  const Workload w(20000, 0x7ab1e);
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < w.live(); i++) keys.push_back(w.key(i));
  std::sort(keys.begin(), keys.end());  // std::string order is bytewise: LevelDB's default

  leveldb::Env* env = leveldb::Env::Default();
  leveldb::Options options;
  options.filter_policy = policy.get();
  {
    leveldb::WritableFile* file = nullptr;
    check(env->NewWritableFile(path, &file), "create table file");
    std::unique_ptr<leveldb::WritableFile> owner(file);
    leveldb::TableBuilder builder(options, file);
    for (size_t i = 0; i < keys.size(); i++) builder.Add(keys[i], w.value(i, 1));
    check(builder.Finish(), "table finish");
    check(file->Close(), "table close");
  }
  uint64_t size = 0;
  check(env->GetFileSize(path, &size), "table size");
  leveldb::RandomAccessFile* file = nullptr;
  check(env->NewRandomAccessFile(path, &file), "open table file");
  std::unique_ptr<leveldb::RandomAccessFile> file_owner(file);
  leveldb::Table* table = nullptr;
  check(leveldb::Table::Open(options, file, size, &table), "table open");
  std::unique_ptr<leveldb::Table> table_owner(table);
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(leveldb::ReadOptions()));
  size_t i = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), i++) {
    if (i >= keys.size() || it->key() != leveldb::Slice(keys[i]) || it->value() != w.value(i, 1)) {
      die("table entry %s differs", std::to_string(i));
    }
  }
  check(it->status(), "table iterator");
  if (i != keys.size()) die("table holds %s entries", std::to_string(i));
  std::printf("table: keys=%zu bytes=%" PRIu64 "\n", keys.size(), size);
  const leveldb_bloom_stats s = policy.stats();
  if (policy.mode() != Mode::kStock && (s.filters_built == 0 || s.keys_added != keys.size())) {
    die("the table's filters were not built by leveldb-bloom");
  }
  return 0;
}

// entries: what LevelDB's own leveldb::Table iteration counts in each table file of a
// database directory (checksums verified), one "FILE ENTRIES" line each, sorted: the oracle
// for the leveldb-bloom command's counts (check_cli_counts.cmake).
int cmd_entries(const std::string& dir) {
  leveldb::Env* env = leveldb::Env::Default();
  std::vector<std::string> children;
  if (!env->GetChildren(dir, &children).ok()) die("cannot list %s", dir);
  std::sort(children.begin(), children.end());
  for (const std::string& name : children) {
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string ext = name.substr(dot);
    if (ext != ".ldb" && ext != ".sst") continue;
    std::string error;
    const int64_t entries = support::leveldb_table_entries(dir + "/" + name, &error);
    if (entries < 0) die("%s: %s", dir + "/" + name, error);
    std::printf("%s %" PRId64 "\n", name.c_str(), entries);
  }
  return 0;
}

uint64_t parse_count(const char* s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 0);
  if (end == s || *end != '\0' || *s == '-') die("not a count: %s", s);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 3 && std::string(argv[1]) == "entries") return cmd_entries(argv[2]);
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s write POLICY DB_DIR KEYS SEED\n"
                 "       %s read POLICY DB_DIR KEYS SEED [compact]   (compact: the database's\n"
                 "                                                    filters are compact)\n"
                 "       %s table POLICY FILE\n"
                 "       %s entries DB_DIR   (each table's entries, by LevelDB's iteration)\n"
                 "POLICY: stock | callbacks | dropin | dropin_compact\n",
                 argv[0], argv[0], argv[0], argv[0]);
    return 2;
  }
  const std::string cmd = argv[1], mode_arg = argv[2];
  Mode mode;
  if (mode_arg == "stock") {
    mode = Mode::kStock;
  } else if (mode_arg == "callbacks") {
    mode = Mode::kCallbacks;
  } else if (mode_arg == "dropin") {
    mode = Mode::kDropIn;
  } else if (mode_arg == "dropin_compact") {
    mode = Mode::kDropInCompact;
  } else {
    die("unknown policy %s", mode_arg);
  }
  const Policy policy(mode);
  if (cmd == "table" && argc == 4) return cmd_table(policy, argv[3]);
  const bool compact_filters = cmd == "read" && argc == 7 && std::string(argv[6]) == "compact";
  if ((cmd == "write" && argc == 6) || (cmd == "read" && (argc == 6 || compact_filters))) {
    uint64_t keys = parse_count(argv[4]);
    if (const char* cap = std::getenv("LEVELDB_BLOOM_INTEROP_MAX_KEYS"); cap && *cap) {
      keys = std::min(keys, parse_count(cap));
      std::printf("LEVELDB_BLOOM_INTEROP_MAX_KEYS: %" PRIu64 " keys\n", keys);
    }
    const Workload w(keys, parse_count(argv[5]));
    return cmd == "write" ? cmd_write(policy, argv[3], w)
                          : cmd_read(policy, argv[3], w, compact_filters);
  }
  die("bad arguments for %s", cmd);
}
