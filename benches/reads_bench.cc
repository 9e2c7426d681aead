// reads_bench: what a filter saves where it matters, in table reads. A LevelDB 1.23 database
// of 1,000,000 keys is written and compacted with each policy; then present and absent keys
// are looked up through an Env that counts every read of a table file and can add a fixed
// delay to each (an emulated SSD). No block cache (capacity 0, fill_cache off), so every data
// block a Get needs is read from the file: a table read per Get is a filter's false positive
// (absent keys) or the one block that holds the key (present keys).
//
// Policies: "stock" (leveldb::NewBloomFilterPolicy from libleveldb) and "dropin" (the drop-in's
// object, in the format LEVELDB_BLOOM_FORMAT chooses: the program reports which, from the
// filters it builds), each at 10 bits per key. Key shapes: "random" (16 pseudo-random bytes)
// and "sequential" ("user" + 12 digits: user000000000122, the shape where LevelDB's hash
// passes more than its nominal rate). Present key i is number 2i, absent key i is 2i + 1, so
// absent keys lie among present ones and every lookup reaches a filter.
//
// Usage: leveldb_bloom_reads_bench [--quick] [--policies stock,dropin] [--shapes random,sequential]
//                                  [--keys N] [--gets N] [--delay-us US] [--csv FILE] [--dir DIR]
// Each row: policy, format, shape, table reads per absent and per present Get, ns per Get
// without delay, us per Get with the delay. Every Get is checked (value or NotFound).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include "bench.h"
#include "leveldb_bloom.h"

namespace fs = std::filesystem;

namespace {

using bench::Fail;
using bench::NowNs;

constexpr int kBitsPerKey = 10;
constexpr size_t kValueLen = 100;

// Counts the reads of table files, each optionally delayed by a busy wait (a sleep would
// oversleep by tens of microseconds).
struct ReadCounter {
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> delay_ns{0};  // a background compaction may read tables too
};

class CountingFile final : public leveldb::RandomAccessFile {
 public:
  CountingFile(leveldb::RandomAccessFile* file, ReadCounter* counter) : file_(file), counter_(counter) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    counter_->reads.fetch_add(1, std::memory_order_relaxed);
    if (const uint64_t delay = counter_->delay_ns.load(std::memory_order_relaxed); delay != 0) {
      const uint64_t until = NowNs() + delay;
      while (NowNs() < until) {
      }
    }
    return file_->Read(offset, n, result, scratch);
  }

 private:
  std::unique_ptr<leveldb::RandomAccessFile> file_;
  ReadCounter* counter_;
};

class CountingEnv final : public leveldb::EnvWrapper {
 public:
  explicit CountingEnv(ReadCounter* counter) : EnvWrapper(leveldb::Env::Default()), counter_(counter) {}
  leveldb::Status NewRandomAccessFile(const std::string& name,
                                      leveldb::RandomAccessFile** result) override {
    leveldb::Status s = target()->NewRandomAccessFile(name, result);
    if (s.ok() && name.size() > 4 && name.compare(name.size() - 4, 4, ".ldb") == 0) {
      *result = new CountingFile(*result, counter_);
    }
    return s;
  }

 private:
  ReadCounter* counter_;
};

std::string Key(const std::string& shape, uint64_t n) {
  char buf[32];
  if (shape == "sequential") {
    std::snprintf(buf, sizeof buf, "user%012" PRIu64, n);
    return buf;
  }
  bench::Rng rng(n * 0x9e3779b97f4a7c15ull + 1);
  const uint64_t a = rng.Next(), b = rng.Next();
  std::memcpy(buf, &a, 8);
  std::memcpy(buf + 8, &b, 8);
  return std::string(buf, 16);
}

std::string Value(uint64_t i) {
  bench::Rng rng(i + 77);
  std::string v(kValueLen, '\0');
  for (size_t j = 0; j < kValueLen; j += 8) {
    const uint64_t x = rng.Next();
    std::memcpy(&v[j], &x, std::min<size_t>(8, kValueLen - j));
  }
  return v;
}

void Check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) Fail("%s: %s", what, s.ToString().c_str());
}

struct Row {
  std::string policy, format, shape;
  double reads_absent = 0, reads_present = 0;  // table reads per Get
  double ns_absent = 0, ns_present = 0;        // per Get, no delay
  double us_absent_delayed = 0, us_present_delayed = 0;
};

struct Config {
  uint64_t keys = 1000000;
  uint64_t gets = 200000;  // absent Gets; present Gets are a quarter of it
  uint64_t delay_us = 80;
  std::vector<std::string> policies = {"stock", "dropin"};
  std::vector<std::string> shapes = {"random", "sequential"};
  std::string csv, dir;
};

// Times `count` Gets of present (or absent) keys chosen by `rng`; returns ns per Get and the
// table reads per Get. Checks every answer.
std::pair<double, double> TimeGets(leveldb::DB* db, const std::string& shape, const Config& cfg,
                                   uint64_t count, bool present, uint64_t seed, ReadCounter* counter) {
  bench::Rng rng(seed);
  leveldb::ReadOptions ro;
  ro.fill_cache = false;
  std::string got;
  const uint64_t reads0 = counter->reads.load();
  const uint64_t t0 = NowNs();
  for (uint64_t g = 0; g < count; g++) {
    const uint64_t i = rng.Next() % cfg.keys;
    const leveldb::Status s = db->Get(ro, Key(shape, 2 * i + (present ? 0 : 1)), &got);
    if (present) {
      Check(s, "get present key");
      if (got != Value(i)) Fail("present key %" PRIu64 ": wrong value", i);
    } else if (!s.IsNotFound()) {
      Fail("absent key %" PRIu64 ": %s", i, s.ok() ? "found" : s.ToString().c_str());
    }
  }
  const double ns = static_cast<double>(NowNs() - t0) / static_cast<double>(count);
  const double reads = static_cast<double>(counter->reads.load() - reads0) / static_cast<double>(count);
  return {ns, reads};
}

Row Measure(const std::string& name, const leveldb::FilterPolicy* policy, const std::string& shape,
            const Config& cfg) {
  ReadCounter counter;
  CountingEnv env(&counter);
  std::unique_ptr<leveldb::Cache> cache(leveldb::NewLRUCache(0));
  leveldb::Options options;
  options.env = &env;
  options.block_cache = cache.get();
  options.filter_policy = policy;
  options.create_if_missing = true;
  options.error_if_exists = true;
  // Every key in one memtable, so no compaction runs while writing: CompactRange then lays
  // the tables out the same way for every policy (the same files, byte for byte, for stock
  // and the drop-in's Bloom filters), and each policy's reads are those of the same Gets.
  options.write_buffer_size = static_cast<size_t>(cfg.keys) * 256 + (4 << 20);
  const std::string path = cfg.dir + "/" + name + "_" + shape;
  fs::remove_all(path);

  leveldb::DB* raw = nullptr;
  Check(leveldb::DB::Open(options, path, &raw), "open");
  std::unique_ptr<leveldb::DB> db(raw);
  {
    leveldb::WriteBatch batch;
    for (uint64_t i = 0; i < cfg.keys; i++) {
      batch.Put(Key(shape, 2 * i), Value(i));
      if (i % 1000 == 999 || i + 1 == cfg.keys) {
        Check(db->Write(leveldb::WriteOptions(), &batch), "write");
        batch.Clear();
      }
    }
  }
  db->CompactRange(nullptr, nullptr);
  db->CompactRange(nullptr, nullptr);  // the first may leave the last memtable's level apart

  // Open every table (index and filter blocks are then held by the table cache), so that
  // the counted reads are those of the Gets.
  const uint64_t present_gets = std::max<uint64_t>(cfg.gets / 4, 1);
  TimeGets(db.get(), shape, cfg, std::min<uint64_t>(cfg.keys, 20000), true, 1, &counter);

  Row row;
  row.policy = name;
  row.format = support::builds_compact_filters(policy) ? "compact" : "bloom";
  row.shape = shape;
  std::tie(row.ns_absent, row.reads_absent) = TimeGets(db.get(), shape, cfg, cfg.gets, false, 2, &counter);
  std::tie(row.ns_present, row.reads_present) = TimeGets(db.get(), shape, cfg, present_gets, true, 3, &counter);
  counter.delay_ns.store(cfg.delay_us * 1000);
  row.us_absent_delayed = TimeGets(db.get(), shape, cfg, cfg.gets, false, 4, &counter).first / 1000;
  row.us_present_delayed =
      TimeGets(db.get(), shape, cfg, std::max<uint64_t>(present_gets / 4, 1), true, 5, &counter).first / 1000;
  db.reset();
  fs::remove_all(path);
  return row;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) out.push_back(part);
  return out;
}

void Usage() {
  std::printf(
      "usage: leveldb_bloom_reads_bench [--quick] [--policies stock,dropin] [--shapes random,sequential]\n"
      "                                 [--keys N] [--gets N] [--delay-us US] [--csv FILE] [--dir DIR]\n"
      "  --quick      20,000 keys, 4,000 absent Gets (a smoke test)\n"
      "  --keys N     keys in each database (default 1000000)\n"
      "  --gets N     absent-key Gets (default 200000); present-key Gets are a quarter of it,\n"
      "               and a quarter of that again with the delay\n"
      "  --delay-us   added to every table read in the delayed passes (default 80)\n"
      "  --csv FILE   append one CSV row per policy and key shape (header if the file is new)\n"
      "  --dir DIR    where the databases go (default: a new directory under /tmp, removed)\n"
      "The drop-in builds what LEVELDB_BLOOM_FORMAT says; each row names the format it saw.\n");
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  bool quick = false, keys_set = false, gets_set = false;
  support::parse_args(argc, argv, Usage, [&](const std::string& a, auto value) {
    if (a == "--quick") return quick = true, true;
    if (a == "--policies") return cfg.policies = Split(value()), true;
    if (a == "--shapes") return cfg.shapes = Split(value()), true;
    if (a == "--keys") return cfg.keys = std::strtoull(value(), nullptr, 10), keys_set = true, true;
    if (a == "--gets") return cfg.gets = std::strtoull(value(), nullptr, 10), gets_set = true, true;
    if (a == "--delay-us") return cfg.delay_us = std::strtoull(value(), nullptr, 10), true;
    if (a == "--csv") return cfg.csv = value(), true;
    if (a == "--dir") return cfg.dir = value(), true;
    return false;
  });
  if (quick) {
    if (!keys_set) cfg.keys = 20000;
    if (!gets_set) cfg.gets = 4000;
  }
  if (cfg.keys == 0 || cfg.gets == 0) Fail("bad --keys or --gets");
  for (const auto& s : cfg.shapes) {
    if (s != "random" && s != "sequential") Fail("unknown key shape %s", s.c_str());
  }

  bench::PrintMachine("leveldb_bloom_reads_bench: table reads per Get, LevelDB 1.23");
  bench::Policies pol = bench::MakePolicies(kBitsPerKey, false);
  std::unique_ptr<const leveldb::FilterPolicy> stock(pol.stock), dropin(pol.dropin);

  bool made_dir = false;
  if (cfg.dir.empty()) {
    char templ[] = "/tmp/leveldb_bloom_reads_bench.XXXXXX";
    if (mkdtemp(templ) == nullptr) Fail("mkdtemp failed");
    cfg.dir = templ;
    made_dir = true;
  } else {
    fs::create_directories(cfg.dir);
  }
  std::printf("%" PRIu64 " keys, 100-byte values, %d bits per key, no block cache; %" PRIu64
              " absent and %" PRIu64 " present Gets; delayed passes add %" PRIu64
              " us to every table read\n",
              cfg.keys, kBitsPerKey, cfg.gets, std::max<uint64_t>(cfg.gets / 4, 1), cfg.delay_us);
  std::printf("%-8s %-8s %-11s %14s %14s %10s %10s %14s %14s\n", "policy", "format", "keys",
              "reads/absent", "reads/present", "ns/absent", "ns/present", "us/absent+d",
              "us/present+d");

  FILE* csv = nullptr;
  if (!cfg.csv.empty()) {
    const bool fresh = !fs::exists(cfg.csv) || fs::file_size(cfg.csv) == 0;
    csv = std::fopen(cfg.csv.c_str(), "a");
    if (csv == nullptr) Fail("cannot open %s", cfg.csv.c_str());
    if (fresh) {
      std::fprintf(csv,
                   "policy,format,shape,keys,delay_us,reads_per_absent_get,reads_per_present_get,"
                   "ns_per_absent_get,ns_per_present_get,us_per_absent_get_delayed,"
                   "us_per_present_get_delayed\n");
    }
  }
  for (const auto& shape : cfg.shapes) {
    for (const auto& name : cfg.policies) {
      const leveldb::FilterPolicy* policy = name == "stock" ? stock.get()
                                            : name == "dropin" ? dropin.get()
                                                               : nullptr;
      if (policy == nullptr) Fail("unknown policy %s", name.c_str());
      const Row r = Measure(name, policy, shape, cfg);
      std::printf("%-8s %-8s %-11s %14.5f %14.5f %10.0f %10.0f %14.1f %14.1f\n", r.policy.c_str(),
                  r.format.c_str(), r.shape.c_str(), r.reads_absent, r.reads_present, r.ns_absent,
                  r.ns_present, r.us_absent_delayed, r.us_present_delayed);
      if (csv != nullptr) {
        std::fprintf(csv, "%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%.6f,%.6f,%.1f,%.1f,%.2f,%.2f\n",
                     r.policy.c_str(), r.format.c_str(), r.shape.c_str(), cfg.keys, cfg.delay_us,
                     r.reads_absent, r.reads_present, r.ns_absent, r.ns_present,
                     r.us_absent_delayed, r.us_present_delayed);
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);
  if (made_dir) fs::remove_all(cfg.dir);
  return 0;
}
