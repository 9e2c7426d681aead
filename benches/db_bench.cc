// db_bench: a LevelDB database end to end, with stock LevelDB 1.23's Bloom filter policy and
// with leveldb-bloom's drop-in object, in one process.
//
// Workload (defaults): 1,000,000 keys of 16 bytes ("k" + 15 decimal digits of 2*i, so the
// absent keys 2*i+1 lie between present ones and every absent lookup lands inside some
// table's key range, where the filter decides) with 100-byte pseudo-random values, written
// in RANDOM order with one Put each (default WriteOptions), then CompactRange over everything
// (twice: see Fill).
// Each policy fills its own database (separate directories; the policy going first alternates
// across fill repetitions; the last fill's databases are kept for the reads). The drop-in
// builds the format LEVELDB_BLOOM_FORMAT chooses (the program reports which, from the filters
// it builds). Reads of Bloom databases: repetition r reopens database r % 2 once with each
// policy (so both policies read the same files, with the same layout and page cache; each
// database is read by both, which also shows they are interchangeable). Reads with compact
// filters: each policy its own databases (stock LevelDB answers "may match" to a compact
// filter, so its reads of the drop-in's database would measure no filter at all), the last
// two fills' of each, repetition r reading copy r % 2: one database's files read a few
// percent faster or slower than another's, whoever reads them. The policy going first
// alternates every two repetitions. Default Options
// (8 MiB block cache, snappy, 4 MiB write buffer). A warm-up of random reads opens every table,
// then random present keys and random absent keys are timed. Every read is checked: present
// keys return their value, absent keys NotFound. Which object serves each side is proven at
// start (bench::MakePolicies: each object's class, found with dladdr). The drop-in's policy
// does not count (as in a program that does not ask for its statistics).
//
// Usage: leveldb_bloom_db_bench [--quick] [--dir DIR] [--keys N] [--reads N] [--reps N]
//                               [--fill-reps N] [--keep]

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include "bench.h"
#include "leveldb_bloom.h"

namespace fs = std::filesystem;

namespace {

using bench::Fail;
using bench::NowNs;
using bench::Rng;

constexpr size_t kKeyLen = 16;
constexpr size_t kValueLen = 100;

struct Config {
  uint64_t keys = 1000000;
  uint64_t reads = 200000;  // present reads and as many absent reads, per repetition
  int reps = 8;
  int fill_reps = 8;  // a fill varies by several percent from one run to the next
  std::string dir;
  std::string csv;
  bool keep = false;
  bool quick = false;
};

void KeyOf(uint64_t n, char* out) {  // "k" + 15 digits of n
  out[0] = 'k';
  for (int i = 15; i >= 1; i--) {
    out[i] = static_cast<char>('0' + n % 10);
    n /= 10;
  }
}

void ValueOf(uint64_t i, char* out) {
  Rng r(0x7a1e0000ull ^ (i * 0x9e3779b97f4a7c15ull));
  r.Fill(out, kValueLen);
}

void Check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) Fail("%s: %s", what, s.ToString().c_str());
}

enum Side { kStock = 0, kDropIn = 1 };
const char* kSideName[2] = {"stock LevelDB", "drop-in"};

struct Sample {
  std::vector<char> keys;      // n * kKeyLen, contiguous
  std::vector<uint64_t> index;  // the key index of each (present samples: value index)
};

Sample MakeSample(uint64_t n, uint64_t keys, bool present, Rng& rng) {
  Sample s;
  s.keys.resize(n * kKeyLen);
  s.index.resize(n);
  for (uint64_t j = 0; j < n; j++) {
    uint64_t i = rng.Below(keys);
    s.index[j] = i;
    KeyOf(present ? 2 * i : 2 * i + 1, s.keys.data() + j * kKeyLen);
  }
  return s;
}

leveldb::DB* OpenDatabase(const std::string& dir, const leveldb::FilterPolicy* policy, bool create) {
  leveldb::Options o;
  o.filter_policy = policy;
  o.create_if_missing = create;
  o.error_if_exists = create;
  leveldb::DB* db = nullptr;
  Check(leveldb::DB::Open(o, dir, &db), ("open " + dir).c_str());
  return db;
}

struct FillResult {
  double fill_s, compact_s;
};

FillResult Fill(const std::string& dir, const leveldb::FilterPolicy* policy,
                const std::vector<uint32_t>& order) {
  leveldb::DB* db = OpenDatabase(dir, policy, true);
  char key[kKeyLen], value[kValueLen];
  leveldb::WriteOptions wo;
  uint64_t t0 = NowNs();
  for (uint32_t i : order) {
    KeyOf(2 * uint64_t{i}, key);
    ValueOf(i, value);
    Check(db->Put(wo, leveldb::Slice(key, kKeyLen), leveldb::Slice(value, kValueLen)), "put");
  }
  uint64_t t1 = NowNs();
  // The first CompactRange leaves everything in level 2, 10% over its 100 MB budget, so a
  // background compaction then moves some files on to level 3, at a moment that depends on
  // thread timing. The second pushes all of level 2 into level 3: one level, the same tables
  // for both policies whatever the timing, and no further compaction pending.
  db->CompactRange(nullptr, nullptr);
  db->CompactRange(nullptr, nullptr);
  uint64_t t2 = NowNs();
  delete db;
  return {(t1 - t0) / 1e9, (t2 - t1) / 1e9};
}

struct ReadResult {
  double present_us, absent_us;
};

ReadResult Read(const std::string& dir, const leveldb::FilterPolicy* policy, const Sample& warm,
                const Sample& present, const Sample& absent) {
  leveldb::DB* db = OpenDatabase(dir, policy, false);
  leveldb::ReadOptions ro;
  std::string v;
  char expect[kValueLen];
  uint64_t found = 0;
  for (size_t j = 0; j < warm.index.size(); j++) {
    found += db->Get(ro, leveldb::Slice(warm.keys.data() + j * kKeyLen, kKeyLen), &v).ok();
  }
  if (found != warm.index.size()) Fail("warm-up: %zu of %zu present keys found", size_t(found), warm.index.size());

  ReadResult r{};
  uint64_t t0 = NowNs();
  for (size_t j = 0; j < present.index.size(); j++) {
    leveldb::Status st = db->Get(ro, leveldb::Slice(present.keys.data() + j * kKeyLen, kKeyLen), &v);
    ValueOf(present.index[j], expect);
    if (!st.ok() || v.size() != kValueLen || std::memcmp(v.data(), expect, kValueLen) != 0) {
      Fail("%s: present key %llu: %s, value of %zu bytes%s", dir.c_str(),
           static_cast<unsigned long long>(2 * present.index[j]), st.ToString().c_str(), v.size(),
           st.ok() ? " differs" : "");
    }
  }
  uint64_t t1 = NowNs();
  uint64_t not_found = 0;
  for (size_t j = 0; j < absent.index.size(); j++) {
    leveldb::Status st = db->Get(ro, leveldb::Slice(absent.keys.data() + j * kKeyLen, kKeyLen), &v);
    if (!st.IsNotFound()) {
      Fail("%s: absent key %llu: %s", dir.c_str(),
           static_cast<unsigned long long>(2 * absent.index[j] + 1), st.ToString().c_str());
    }
    not_found++;
  }
  uint64_t t2 = NowNs();
  delete db;
  bench::g_sink = bench::g_sink + not_found + found;
  r.present_us = (t1 - t0) / 1e3 / present.index.size();
  r.absent_us = (t2 - t1) / 1e3 / absent.index.size();
  return r;
}

std::vector<fs::path> TableFiles(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".ldb" || e.path().extension() == ".sst") files.push_back(e.path());
  }
  // By file number (names are zero-padded numbers).
  std::sort(files.begin(), files.end());
  return files;
}

std::string Layout(const std::string& dir, const leveldb::FilterPolicy* policy) {
  leveldb::DB* db = OpenDatabase(dir, policy, false);
  std::string out;
  for (int level = 0; level < 7; level++) {
    std::string v;
    db->GetProperty("leveldb.num-files-at-level" + std::to_string(level), &v);
    out += (level ? "/" : "") + v;
  }
  delete db;
  uint64_t bytes = 0;
  for (const auto& f : TableFiles(dir)) bytes += fs::file_size(f);
  char b[64];
  std::snprintf(b, sizeof b, " files per level 0-6, %.1f MiB of tables", bytes / 1048576.0);
  return out + b;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string List(const std::vector<double>& v, const char* fmt) {
  std::string s;
  for (double x : v) {
    char b[32];
    std::snprintf(b, sizeof b, fmt, x);
    s += (s.empty() ? "" : " ") + std::string(b);
  }
  return s;
}

void Usage() {
  std::printf(
      "usage: leveldb_bloom_db_bench [--quick] [--dir DIR] [--keys N] [--reads N] [--reps N]\n"
      "                              [--fill-reps N] [--keep] [--csv FILE]\n"
      "  --quick        20,000 keys, 5,000 reads, 2 read repetitions, 1 fill (smoke test)\n"
      "  --dir DIR      where the databases go (default: a new directory under $TMPDIR or /tmp,\n"
      "                 removed at the end)\n"
      "  --keys N       keys in each database (default 1000000)\n"
      "  --reads N      present reads, and as many absent reads, per repetition (default 200000)\n"
      "  --reps N       read repetitions (default 8), --fill-reps N fills per policy (default 8)\n"
      "  --keep         keep the databases\n"
      "  --csv FILE     also write the summary's medians to FILE\n");
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  bool keys_set = false, reads_set = false, reps_set = false, fill_set = false;
  support::parse_args(argc, argv, Usage, [&](const std::string& a, auto value) {
    if (a == "--quick") return cfg.quick = true, true;
    if (a == "--dir") return cfg.dir = value(), true;
    if (a == "--keys") return cfg.keys = std::strtoull(value(), nullptr, 10), keys_set = true, true;
    if (a == "--reads") return cfg.reads = std::strtoull(value(), nullptr, 10), reads_set = true, true;
    if (a == "--reps") return cfg.reps = std::atoi(value()), reps_set = true, true;
    if (a == "--fill-reps") return cfg.fill_reps = std::atoi(value()), fill_set = true, true;
    if (a == "--keep") return cfg.keep = true, true;
    if (a == "--csv") return cfg.csv = value(), true;
    return false;
  });
  if (cfg.quick) {
    if (!keys_set) cfg.keys = 20000;
    if (!reads_set) cfg.reads = 5000;
    if (!reps_set) cfg.reps = 2;
    if (!fill_set) cfg.fill_reps = 1;
  }
  cfg.reps = std::max(cfg.reps, 1);
  cfg.fill_reps = std::max(cfg.fill_reps, 1);
  if (cfg.keys == 0 || cfg.keys > UINT32_MAX || cfg.reads == 0) Fail("bad --keys or --reads");

  const uint64_t start = NowNs();
  bench::PrintMachine("leveldb_bloom_db_bench: LevelDB 1.23 database, stock Bloom policy vs drop-in");

  // Where the databases go.
  bool made_dir = false;
  if (cfg.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/leveldb_bloom_db_bench.XXXXXX";
    std::vector<char> t(templ.begin(), templ.end());
    t.push_back('\0');
    if (mkdtemp(t.data()) == nullptr) Fail("mkdtemp %s failed", templ.c_str());
    cfg.dir = t.data();
    made_dir = true;
  } else {
    fs::create_directories(cfg.dir);
  }
  const std::string dbdir[2] = {cfg.dir + "/stock", cfg.dir + "/dropin"};

  bench::Policies pol = bench::MakePolicies(10, true);
  const leveldb::FilterPolicy* policy[2] = {pol.stock, pol.dropin};
  const bool compact = support::builds_compact_filters(pol.dropin);
  const char* const format = compact ? "compact" : "bloom";
  if (compact) kSideName[kDropIn] = "drop-in cmpct";
  // Each side's databases: with compact filters the last two fills' (copy = fill % copies).
  const int copies = compact ? std::min(cfg.fill_reps, 2) : 1;
  auto db_of = [&](int side, int copy) {
    return compact ? dbdir[side] + "." + std::to_string(copy) : dbdir[side];
  };
  for (int side = 0; side < 2; side++) {
    for (int copy = 0; copy < copies; copy++) fs::remove_all(db_of(side, copy));  // ours, from an earlier run
  }
  std::printf("the drop-in's format: %s (LEVELDB_BLOOM_FORMAT)\n", format);

  std::printf(
      "workload: %llu keys of %zu bytes (k + 15 digits of 2i; absent keys 2i+1 interleaved),\n"
      "  %zu-byte random values, written in random order, one Put each, then CompactRange x2 (all in one level);\n"
      "  each policy its own database (bits per key 10) on %s; default Options\n"
      "  (8 MiB block cache, snappy); %d fill(s) per policy, %d read repetitions of %llu random\n"
      "  present and %llu random absent Gets; repetition r: both policies read database r %% 2\n"
      "  (reopened for each), which policy goes first alternating every two repetitions.\n",
      static_cast<unsigned long long>(cfg.keys), kKeyLen, kValueLen,
      made_dir ? "a new temporary directory" : "the directory given",
      cfg.fill_reps, cfg.reps, static_cast<unsigned long long>(cfg.reads),
      static_cast<unsigned long long>(cfg.reads));
  if (compact) {
    std::printf(
        "  compact filters: each policy reads its own databases instead, the last %d fills'\n"
        "  (repetition r: copy r %% %d), since stock LevelDB reads compact filters unfiltered.\n",
        copies, copies);
  }
  std::fflush(stdout);

  // --- Fill and compact.
  std::vector<uint32_t> order(cfg.keys);
  for (uint32_t i = 0; i < cfg.keys; i++) order[i] = i;
  Rng rng(0xdb0be7c4);
  bench::Shuffle(order.data(), order.size(), rng);
  std::vector<double> fill_s[2], compact_s[2];
  for (int rep = 0; rep < cfg.fill_reps; rep++) {
    for (int k = 0; k < 2; k++) {
      int side = (rep + k) % 2;
      const std::string dir = db_of(side, rep % copies);
      fs::remove_all(dir);
      FillResult f = Fill(dir, policy[side], order);
      fill_s[side].push_back(f.fill_s);
      compact_s[side].push_back(f.compact_s);
      std::printf("fill %d, %-13s: fill %.2f s, compact %.2f s\n", rep + 1, kSideName[side],
                  f.fill_s, f.compact_s);
      std::fflush(stdout);
    }
  }
  order.clear();
  order.shrink_to_fit();

  // --- Layout. (Table boundaries depend on compaction timing: two fills with the same policy
  // do not give byte-identical tables either, so the layouts are only shown.)
  for (int side = 0; side < 2; side++) {
    std::printf("layout, database written by %-13s: %s\n", kSideName[side],
                Layout(db_of(side, (cfg.fill_reps - 1) % copies), policy[side]).c_str());
  }

  // --- Reads. Repetition r reads database r % 2 with both policies (each database is read by
  // both: the same files, page cache and layout for the two policies), or with compact filters
  // each policy its own; the policy going first alternates every two repetitions so that order
  // and database are not confounded.
  std::vector<double> present_us[2], absent_us[2];
  const uint64_t warm_n = std::min<uint64_t>(cfg.reads / 4 + 1, 20000);
  for (int rep = 0; rep < cfg.reps; rep++) {
    const int db = rep % 2;
    const int first = (rep / 2) % 2;
    Rng r(0x5a3e7 + rep);
    Sample warm = MakeSample(warm_n, cfg.keys, true, r);
    Sample present = MakeSample(cfg.reads, cfg.keys, true, r);
    Sample absent = MakeSample(cfg.reads, cfg.keys, false, r);
    for (int k = 0; k < 2; k++) {
      int side = (first + k) % 2;
      ReadResult rr = Read(compact ? db_of(side, rep % copies) : dbdir[db], policy[side], warm,
                           present, absent);
      present_us[side].push_back(rr.present_us);
      absent_us[side].push_back(rr.absent_us);
      std::printf("read %d, db of %-7s, %-13s: present %.3f us/get, absent %.3f us/get\n",
                  rep + 1, (compact ? side : db) == kStock ? "stock" : "drop-in", kSideName[side],
                  rr.present_us, rr.absent_us);
      std::fflush(stdout);
    }
  }

  // --- Summary.
  std::printf("\n%-26s %14s %14s %12s   %s\n", "median", "stock LevelDB", kSideName[kDropIn],
              "stock/dropin", "(each repetition: stock | drop-in)");
  FILE* csv = bench::OpenCsv(cfg.csv, [](FILE* f) {
    std::fprintf(f, "format,measure,unit,keys,repetitions,stock_median,dropin_median,stock_over_dropin\n");
  });
  auto row = [&](const char* what, const std::vector<double>* v, const char* fmt) {
    double a = Median(v[0]), b = Median(v[1]);
    if (csv != nullptr) {
      // "fill (s)" -> measure "fill", unit "s".
      const std::string w(what);
      const size_t paren = w.find(" (");
      std::fprintf(csv, "%s,%s,%s,%llu,%zu,%.4f,%.4f,%.4f\n", format, w.substr(0, paren).c_str(),
                   w.substr(paren + 2, w.size() - paren - 3).c_str(),
                   static_cast<unsigned long long>(cfg.keys), v[0].size(), a, b,
                   b > 0 ? a / b : 0);
    }
    std::printf("%-26s %14.3f %14.3f %12.3f   %s | %s\n", what, a, b, b > 0 ? a / b : 0,
                List(v[0], fmt).c_str(), List(v[1], fmt).c_str());
  };
  row("fill (s)", fill_s, "%.2f");
  row("compact (s)", compact_s, "%.2f");
  row("read present (us/get)", present_us, "%.3f");
  row("read absent (us/get)", absent_us, "%.3f");
  if (csv != nullptr) std::fclose(csv);
  std::printf("(stock/dropin > 1: the drop-in is faster)\n");
  std::printf("all reads checked: %d x %llu present keys with their values, %d x %llu absent keys NotFound, per policy\n",
              cfg.reps, static_cast<unsigned long long>(cfg.reads), cfg.reps,
              static_cast<unsigned long long>(cfg.reads));

  delete pol.dropin;
  delete pol.stock;
  if (!cfg.keep) {
    for (int side = 0; side < 2; side++) {
      for (int copy = 0; copy < copies; copy++) fs::remove_all(db_of(side, copy));
    }
    if (made_dir) fs::remove(cfg.dir);
  }
  std::printf("peak memory (ru_maxrss): %.1f MiB; run time %.1f s; load average at end %s\n",
              bench::PeakRssMiB(), (NowNs() - start) / 1e9, bench::LoadAvg().c_str());
  return 0;
}
