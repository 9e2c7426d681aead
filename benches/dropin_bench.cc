// dropin_bench: the drop-in's policies as LevelDB calls them, through leveldb::FilterPolicy
// (CreateFilter into a std::string, KeyMayMatch), beside LevelDB 1.23's own Bloom policy in
// one process, on the same keys, interleaved:
//
//   LevelDB        leveldb::NewBloomFilterPolicy(10) of libleveldb.so;
//   bloom          the drop-in's Bloom policy (LevelDB's own policy writes, the drop-in
//                  answers);
//   compact        the drop-in's compact policy (LevelDB's own C wrapper over the C API's
//                  callbacks);
//   before bloom, before compact   the same of another build of the drop-in, given as a second
//                  library (scripts/bench dropin builds the one before LevelDB's own code
//                  wrote its strings, whose compact policy was an object of its own).
//
// Each library is a copy loaded with dlopen after LEVELDB_BLOOM_FORMAT is set, which each
// copy reads when it is loaded. Per key length: filters of 100 keys (LevelDB makes one per
// 2 KiB of a table), all built back to back (ns per key), then every key once against its
// filter (present) and as many absent keys (ns per query), in random order, the keys copied
// contiguously in that order. Checks: every
// Bloom side's filters are LevelDB's bytes and answer as LevelDB's; every present key found.
//
// Usage: dropin_bench [--quick] [--csv FILE] DROPIN_SO [BEFORE_DROPIN_SO]

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "bench.h"

namespace {

using bench::Fail;
using bench::NowNs;

struct Side {
  std::string name;
  const leveldb::FilterPolicy* policy;
  bool bloom;  // builds LevelDB's bytes
};

// A copy of the drop-in at `path`, loaded with `format`, and its policy for 10 bits per key.
const leveldb::FilterPolicy* DropIn(const std::string& path, const char* format, int copy) {
  const std::string copied = "dropin_bench_copy_" + std::to_string(copy) + ".so";
  const std::string command = "cp '" + path + "' " + copied;
  if (std::system(command.c_str()) != 0) Fail("cannot copy %s", path.c_str());
  setenv("LEVELDB_BLOOM_FORMAT", format, 1);
  void* handle = dlopen(("./" + copied).c_str(), RTLD_NOW | RTLD_LOCAL);
  unsetenv("LEVELDB_BLOOM_FORMAT");
  if (handle == nullptr) Fail("%s", dlerror());
  using Create = const void* (*)(int);
  auto create = reinterpret_cast<Create>(dlsym(handle, "leveldb_bloom_dropin_filter_policy_create"));
  if (create == nullptr) Fail("%s holds no drop-in", path.c_str());
  return static_cast<const leveldb::FilterPolicy*>(create(10));
}

struct Cell {
  int key_len = 0;
  size_t per_filter = 100, filters = 0;
  std::vector<char> keys;  // contiguous keys, filter by filter
  std::vector<leveldb::Slice> slices;
  // The queries, in a random order: the keys copied contiguously in that order (the key
  // being looked up is at hand; its filter is wherever it is), present and absent ones, and
  // each one's filter.
  std::vector<char> present, absent;
  std::vector<uint32_t> filter_of;
};

Cell MakeCell(int key_len, size_t total, bench::Rng& rng) {
  Cell c;
  c.key_len = key_len;
  c.filters = total / c.per_filter;
  const size_t n = c.filters * c.per_filter;
  c.keys.resize(n * key_len);
  c.absent.resize(n * key_len);
  for (char& b : c.keys) b = static_cast<char>(rng.Next());
  for (char& b : c.absent) b = static_cast<char>(rng.Next());
  for (size_t i = 0; i < n; i++) c.slices.emplace_back(&c.keys[i * key_len], key_len);
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; i++) order[i] = static_cast<uint32_t>(i);
  bench::Shuffle(order.data(), n, rng);
  c.present.resize(n * key_len);
  for (size_t q = 0; q < n; q++) {
    std::memcpy(&c.present[q * key_len], &c.keys[size_t{order[q]} * key_len], key_len);
    c.filter_of.push_back(static_cast<uint32_t>(order[q] / c.per_filter));
  }
  return c;
}

struct Built {
  std::string bytes;
  std::vector<size_t> at;  // each filter's start, then the end
};

// All the cell's filters, back to back: their bytes and the time, ns.
uint64_t Build(const leveldb::FilterPolicy* p, const Cell& c, Built* out) {
  out->bytes.clear();
  out->bytes.reserve(c.filters * (c.per_filter * 2 + 16));
  out->at.clear();
  const uint64_t t0 = NowNs();
  for (size_t f = 0; f < c.filters; f++) {
    out->at.push_back(out->bytes.size());
    p->CreateFilter(&c.slices[f * c.per_filter], static_cast<int>(c.per_filter), &out->bytes);
  }
  const uint64_t t = NowNs() - t0;
  out->at.push_back(out->bytes.size());
  return t;
}

// Every query (present: the cell's keys, absent: as many others) against its filter: the
// time, ns, and the answers.
uint64_t Query(const leveldb::FilterPolicy* p, const Cell& c, const Built& b, bool present,
               std::vector<uint8_t>* answers) {
  const std::vector<char>& keys = present ? c.present : c.absent;
  answers->assign(c.filter_of.size(), 0);
  uint64_t hits = 0;
  const uint64_t t0 = NowNs();
  for (size_t q = 0; q < c.filter_of.size(); q++) {
    const size_t f = c.filter_of[q];
    const leveldb::Slice filter(b.bytes.data() + b.at[f], b.at[f + 1] - b.at[f]);
    const bool may = p->KeyMayMatch(leveldb::Slice(&keys[q * c.key_len], c.key_len), filter);
    (*answers)[q] = may;
    hits += may;
  }
  const uint64_t t = NowNs() - t0;
  bench::g_sink = bench::g_sink + hits;
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string csv_path;
  std::vector<std::string> libraries;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      libraries.push_back(a);
    }
  }
  if (libraries.empty() || libraries.size() > 2) {
    std::fprintf(stderr, "usage: dropin_bench [--quick] [--csv FILE] DROPIN_SO [BEFORE_DROPIN_SO]\n");
    return 2;
  }
  std::vector<Side> sides{{"LevelDB", leveldb::NewBloomFilterPolicy(10), true}};
  sides.push_back({"bloom", DropIn(libraries[0], "bloom", 0), true});
  sides.push_back({"compact", DropIn(libraries[0], "compact", 1), false});
  if (libraries.size() == 2) {
    sides.push_back({"before bloom", DropIn(libraries[1], "bloom", 2), true});
    sides.push_back({"before compact", DropIn(libraries[1], "compact", 3), false});
  }
  const int reps = quick ? 1 : 15;
  // 1,000 filters, some 125 KB at 10 bits per key: the filters of tables whose filter blocks
  // the processor's caches hold, as a hot database's are.
  const size_t total = quick ? 2000 : 100000;
  bench::PrintMachine("dropin_bench: the drop-in through LevelDB's FilterPolicy interface");
  std::printf("filters of 100 keys, 10 bits per key, %zu keys per length; %d repetitions "
              "(median), sides rotated; ns per key\n", total, reps);
  FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (csv == nullptr) Fail("cannot write %s", csv_path.c_str());
    std::fprintf(csv, "key_len,side,build_ns,present_ns,absent_ns,build_ratio,present_ratio,"
                      "absent_ratio\n");
  }
  std::printf("%7s  %-15s %9s %9s %9s   %s\n", "key len", "side", "build", "present", "absent",
              "LevelDB's time / the side's: build, present, absent");
  bench::Rng rng(0x5eed);
  for (int key_len : {16, 24, 64, 256}) {
    const Cell c = MakeCell(key_len, total, rng);
    std::vector<std::vector<double>> build(sides.size()), present(sides.size()),
        absent(sides.size());
    Built reference;
    std::vector<uint8_t> ref_present, ref_absent;
    Build(sides[0].policy, c, &reference);
    Query(sides[0].policy, c, reference, true, &ref_present);
    Query(sides[0].policy, c, reference, false, &ref_absent);
    for (int rep = 0; rep < reps; rep++) {
      for (size_t j = 0; j < sides.size(); j++) {
        const size_t s = (j + rep) % sides.size();
        Built b;
        std::vector<uint8_t> p, a;
        const double n = double(c.filter_of.size());
        build[s].push_back(double(Build(sides[s].policy, c, &b)) / n);
        present[s].push_back(double(Query(sides[s].policy, c, b, true, &p)) / n);
        absent[s].push_back(double(Query(sides[s].policy, c, b, false, &a)) / n);
        if (std::count(p.begin(), p.end(), 1) != static_cast<long>(p.size())) {
          Fail("%s: a present key not found", sides[s].name.c_str());
        }
        if (sides[s].bloom && (b.bytes != reference.bytes || p != ref_present || a != ref_absent)) {
          Fail("%s: filters or answers other than LevelDB's", sides[s].name.c_str());
        }
      }
    }
    const double base[3] = {Median(build[0]), Median(present[0]), Median(absent[0])};
    for (size_t s = 0; s < sides.size(); s++) {
      const double m[3] = {Median(build[s]), Median(present[s]), Median(absent[s])};
      std::printf("%7d  %-15s %9.1f %9.1f %9.1f   %.2f %.2f %.2f\n", key_len,
                  sides[s].name.c_str(), m[0], m[1], m[2], base[0] / m[0], base[1] / m[1],
                  base[2] / m[2]);
      if (csv) {
        std::fprintf(csv, "%d,%s,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f\n", key_len, sides[s].name.c_str(),
                     m[0], m[1], m[2], base[0] / m[0], base[1] / m[1], base[2] / m[2]);
      }
    }
  }
  if (csv) std::fclose(csv);
  std::printf("all checks passed: Bloom sides' filters and answers are LevelDB's; every present "
              "key found\n");
  return 0;
}
