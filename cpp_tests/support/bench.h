// The benchmarks' part of the test-support library (benches/*.cc): the machine header, the
// check that each symbol comes from the library it must come from, timing, peak memory, a
// sink. Keys, arguments and library lookups come from support.h.
#ifndef LEVELDB_BLOOM_CPP_TESTS_SUPPORT_BENCH_H_
#define LEVELDB_BLOOM_CPP_TESTS_SUPPORT_BENCH_H_

#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <leveldb/db.h>
#include <leveldb/filter_policy.h>

#include "leveldb_bloom.h"
#include "support.h"

namespace bench {

// Results are added here so that no timed loop can be optimized away.
inline volatile uint64_t g_sink = 0;

[[noreturn]] inline void Fail(const char* fmt, ...) {
  std::fflush(stdout);
  std::va_list ap;
  va_start(ap, fmt);
  std::fputs("\nFAILED: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  std::abort();
}

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

using support::Rng;

// The keys of one benchmark cell: `filters` filters of `kpf` keys of `key_len` bytes each
// (filter f holds keys [f * kpf, (f + 1) * kpf)), and as many absent keys (absent key j is
// asked of filter j / kpf), random from the cell's seed.
struct CellKeys {
  int key_len = 0, kpf = 0, bpk = 0;
  size_t filters = 0, keys = 0;
  std::vector<char> build_keys;       // keys * key_len bytes
  std::vector<leveldb::Slice> build;  // one Slice per key of build_keys
  std::vector<char> absent_keys;      // keys * key_len bytes

  // About `keys_total` keys (whole filters, at least one).
  void Make(int key_len_, int kpf_, int bpk_, size_t keys_total, uint64_t seed) {
    key_len = key_len_;
    kpf = kpf_;
    bpk = bpk_;
    filters = std::max<size_t>(1, keys_total / kpf);
    keys = filters * kpf;
    Rng rng(seed);
    build_keys.assign(keys * key_len, 0);
    rng.Fill(build_keys.data(), build_keys.size());
    absent_keys.assign(keys * key_len, 0);
    rng.Fill(absent_keys.data(), absent_keys.size());
    build.resize(keys);
    for (size_t i = 0; i < keys; i++) build[i] = leveldb::Slice(build_keys.data() + i * key_len, key_len);
  }

  // The random source of the cell's query orders: the same cell, the same queries, in every
  // benchmark that draws them.
  Rng QueryRng() const { return Rng(0x5eed0000u + key_len * 1000003u + kpf * 101u + bpk); }
};

// The timed creation loops of a cell of `filters` filters of `n` keys each (filter `f` holds
// keys[f * n .. f * n + n)), `passes` times over the whole cell; the nanoseconds taken.

// Through the C API, the filters written one after another into `buf` (sized before the
// clock starts); fails unless every call succeeded and the last pass wrote `total` bytes.
inline uint64_t TimeCreateCApi(leveldb_bloom_policy* p, const leveldb::Slice* keys, int n,
                               size_t filters, size_t total, int passes,
                               std::vector<uint8_t>* buf, const char* what) {
  buf->resize(total);
  uint8_t* const base = buf->data();
  int bad = 0;
  size_t off = 0;
  const uint64_t t0 = NowNs();
  for (int r = 0; r < passes; r++) {
    off = 0;
    for (size_t f = 0; f < filters; f++) {
      size_t len = 0;
      bad |= leveldb_bloom_create_filter_slices(
          p, reinterpret_cast<const leveldb_bloom_slice*>(keys + f * n), static_cast<size_t>(n),
          base + off, total - off, &len);
      off += len;
    }
  }
  const uint64_t t1 = NowNs();
  if (bad != 0 || off != total) {
    Fail("%s: C API create failed (status %d, %zu of %zu bytes)", what, bad, off, total);
  }
  return t1 - t0;
}

// Through a leveldb::FilterPolicy, appended into `out` (reserved and cleared before the clock
// starts), as LevelDB's filter block builder appends into its result_ string.
inline uint64_t TimeCreateLevelDB(const leveldb::FilterPolicy* policy, const leveldb::Slice* keys,
                                  int n, size_t filters, size_t total, int passes,
                                  std::string* out, const char* what) {
  out->clear();
  out->reserve(total);
  const uint64_t t0 = NowNs();
  for (int r = 0; r < passes; r++) {
    out->clear();
    for (size_t f = 0; f < filters; f++) policy->CreateFilter(keys + f * n, n, out);
  }
  const uint64_t t1 = NowNs();
  if (out->size() != total) Fail("%s built %zu bytes, expected %zu", what, out->size(), total);
  return t1 - t0;
}


template <typename T>
void Shuffle(T* a, size_t n, Rng& rng) {
  for (size_t i = n; i > 1; i--) {
    size_t j = rng.Below(i);
    T t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

// The first value of a /proc/cpuinfo field ("model name", "cpu family", "model").
inline std::string CpuField(const char* name) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  const std::string key(name);
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t c = line.find(':');
    if (c == std::string::npos || line.find_first_not_of(" \t", key.size()) != c) continue;
    return c + 2 <= line.size() ? line.substr(c + 2) : std::string();
  }
  return "unknown";
}

// The processor as benchmark outputs record it: model name, family and model numbers.
inline std::string CpuModel() {
  return CpuField("model name") + " (family " + CpuField("cpu family") + ", model " +
         CpuField("model") + ")";
}

inline int CpuCount() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.rfind("processor", 0) == 0;
  return n;
}

inline std::string LoadAvg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

inline void PrintMachine(const char* program) {
  std::printf("%s\n", program);
  std::printf("processor: %s, %d cores, load average %s at start\n", CpuModel().c_str(),
              CpuCount(), LoadAvg().c_str());
  std::printf("LevelDB %d.%d (libleveldb), leveldb-bloom %s (drop-in library), %s, %s\n",
              leveldb::kMajorVersion, leveldb::kMinorVersion, leveldb_bloom_version(),
#if defined(__clang__)
              "clang " __clang_version__
#elif defined(__GNUC__)
              "g++ " __VERSION__
#else
              "unknown"
#endif
              ,
#if defined(__OPTIMIZE__)
              "optimized build"
#else
              "UNOPTIMIZED build (numbers meaningless)"
#endif
  );
}

inline bool Contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// Aborts unless `addr` lives in a library whose path contains `want` and not `not_want`.
inline void ExpectFrom(const char* what, const void* addr, const char* want,
                       const char* not_want, bool print) {
  std::string lib = support::library_of(addr);
  if (!Contains(lib, want) || (not_want != nullptr && Contains(lib, not_want))) {
    Fail("%s comes from %s, expected %s (link libleveldb before the drop-in, and link the "
         "drop-in, not libleveldb_bloom.so)",
         what, lib.c_str(), want);
  }
  // The file's name only: where it was installed says nothing about the measurement.
  if (print) std::printf("  %-48s %s\n", what, lib.substr(lib.rfind('/') + 1).c_str());
}

// The vtable of a polymorphic object: tells whose class it really is.
inline const void* VtableOf(const void* object) { return *static_cast<void* const*>(object); }

struct Policies {
  const leveldb::FilterPolicy* stock;   // LevelDB 1.23's own
  const leveldb::FilterPolicy* dropin;  // leveldb-bloom through the drop-in's C++ object
};

// Creates both C++ policies and proves each is what it claims to be: the global symbol
// leveldb::NewBloomFilterPolicy and the stock object's class come from libleveldb, the
// drop-in's object and the C API from libleveldb_bloom_dropin.
inline Policies MakePolicies(int bits_per_key, bool verbose) {
  if (verbose) std::printf("where each side comes from (dladdr):\n");
  const void* global_new = dlsym(RTLD_DEFAULT, "_ZN7leveldb20NewBloomFilterPolicyEi");
  ExpectFrom("leveldb::NewBloomFilterPolicy (global lookup)", global_new, "libleveldb.so",
             "bloom", verbose);
  ExpectFrom("leveldb::NewBloomFilterPolicy (as linked)",
             reinterpret_cast<const void*>(&leveldb::NewBloomFilterPolicy), "libleveldb.so",
             "bloom", verbose);
  ExpectFrom("leveldb_bloom_dropin_filter_policy_create",
             reinterpret_cast<const void*>(&leveldb_bloom_dropin_filter_policy_create),
             "libleveldb_bloom_dropin", nullptr, verbose);
  ExpectFrom("leveldb_bloom_key_may_match (C API)",
             reinterpret_cast<const void*>(&leveldb_bloom_key_may_match),
             "libleveldb_bloom_dropin", nullptr, verbose);
  ExpectFrom("leveldb_bloom_key_may_match_batch (C API)",
             reinterpret_cast<const void*>(&leveldb_bloom_key_may_match_batch),
             "libleveldb_bloom_dropin", nullptr, verbose);
  Policies p;
  p.stock = leveldb::NewBloomFilterPolicy(bits_per_key);
  p.dropin = static_cast<const leveldb::FilterPolicy*>(
      leveldb_bloom_dropin_filter_policy_create(bits_per_key));
  if (p.stock == nullptr || p.dropin == nullptr) Fail("could not create the policies");
  ExpectFrom("stock policy object's class (vtable)", VtableOf(p.stock), "libleveldb.so",
             "bloom", verbose);
  ExpectFrom("drop-in policy object's class (vtable)", VtableOf(p.dropin),
             "libleveldb_bloom_dropin", nullptr, verbose);
  if (std::strcmp(p.stock->Name(), "leveldb.BuiltinBloomFilter2") != 0 ||
      std::strcmp(p.dropin->Name(), p.stock->Name()) != 0) {
    Fail("policy names differ: stock \"%s\", drop-in \"%s\"", p.stock->Name(), p.dropin->Name());
  }
  return p;
}

static_assert(sizeof(leveldb::Slice) == sizeof(leveldb_bloom_slice),
              "leveldb::Slice must be (data, size) to be passed as leveldb_bloom_slice");

// Every one of `n` keys of `key_len` bytes once, in random order, copied contiguously into
// `qkeys` in that order (the key being looked up is at hand, its filter wherever it is);
// returns the order: query i asks key perm[i].
inline std::vector<uint32_t> SpreadKeys(const std::vector<char>& keys, size_t n, size_t key_len,
                                        Rng& rng, std::vector<char>* qkeys) {
  std::vector<uint32_t> perm(n);
  for (size_t i = 0; i < n; i++) perm[i] = static_cast<uint32_t>(i);
  Shuffle(perm.data(), perm.size(), rng);
  qkeys->assign(n * key_len, 0);
  for (size_t i = 0; i < n; i++) {
    std::memcpy(qkeys->data() + i * key_len, keys.data() + size_t{perm[i]} * key_len, key_len);
  }
  return perm;
}

// A grouped query sequence: filters in random order, each with all its keys (present or
// absent), copied in that order into one buffer and held both as Slices (per-key calls) and
// as pointer and length arrays (the batch call). Group `g` asks keys [start, start + count)
// of filter number `filter`.
struct Group {
  uint32_t filter;
  size_t start;
  size_t count;
};
struct Grouped {
  std::vector<char> keys;  // the keys, copied contiguously in query order
  std::vector<leveldb::Slice> slices;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  std::vector<Group> groups;
};

// The grouped sequence of `c`'s `keys` (its build or absent keys: filter f's are
// keys[f * kpf .. f * kpf + kpf)).
inline void BuildGrouped(const std::vector<char>& keys, const CellKeys& c, Rng& rng, Grouped* g) {
  std::vector<uint32_t> order(c.filters);
  for (size_t f = 0; f < c.filters; f++) order[f] = static_cast<uint32_t>(f);
  Shuffle(order.data(), order.size(), rng);
  const size_t kpf = static_cast<size_t>(c.kpf), len = static_cast<size_t>(c.key_len);
  g->keys.assign(c.keys * len, 0);
  g->slices.clear();
  g->ptrs.clear();
  g->lens.clear();
  g->groups.clear();
  for (uint32_t f : order) {
    g->groups.push_back(Group{f, g->slices.size(), kpf});
    for (size_t j = 0; j < kpf; j++) {
      char* k = g->keys.data() + g->slices.size() * len;
      std::memcpy(k, keys.data() + (f * kpf + j) * len, len);
      g->slices.emplace_back(k, len);
      g->ptrs.push_back(k);
      g->lens.push_back(len);
    }
  }
}

// LevelDB's per-key KeyMayMatch over a grouped sequence, against filters of `filter_bytes`
// bytes each at `filters` (the baseline of the batch call); the nanoseconds taken.
inline uint64_t TimeGroupedLevelDB(const leveldb::FilterPolicy* policy, const Grouped& g,
                                   const char* filters, size_t filter_bytes, int passes,
                                   uint8_t* res) {
  const leveldb::Slice* keys = g.slices.data();
  uint64_t t0 = NowNs();
  for (int r = 0; r < passes; r++) {
    for (const Group& gr : g.groups) {
      const leveldb::Slice filter(filters + gr.filter * filter_bytes, filter_bytes);
      for (size_t j = gr.start, e = gr.start + gr.count; j < e; j++) {
        res[j] = policy->KeyMayMatch(keys[j], filter);
      }
    }
  }
  return NowNs() - t0;
}

// leveldb_bloom_key_may_match_batch, one call per group, over a grouped sequence; the
// nanoseconds taken. Fails unless every call succeeded.
inline uint64_t TimeBatchCApi(leveldb_bloom_policy* p, const Grouped& g, const uint8_t* filters,
                              size_t filter_bytes, int passes, uint8_t* res) {
  const char* const* ptrs = g.ptrs.data();
  const size_t* lens = g.lens.data();
  int bad = 0;
  uint64_t t0 = NowNs();
  for (int r = 0; r < passes; r++) {
    for (const Group& gr : g.groups) {
      bad |= leveldb_bloom_key_may_match_batch(p, ptrs + gr.start, lens + gr.start, gr.count,
                                               filters + gr.filter * filter_bytes,
                                               filter_bytes, res + gr.start);
    }
  }
  uint64_t t1 = NowNs();
  if (bad != 0) Fail("leveldb_bloom_key_may_match_batch failed (status %d)", bad);
  return t1 - t0;
}

// The CSV file `path` with its header written by `header`, or NULL when `path` is empty.
inline FILE* OpenCsv(const std::string& path, void (*header)(FILE*)) {
  if (path.empty()) return nullptr;
  FILE* csv = std::fopen(path.c_str(), "w");
  if (csv == nullptr) Fail("cannot write %s", path.c_str());
  header(csv);
  return csv;
}

// The options every benchmark takes, and whether each was given.
struct CommonConfig {
  size_t keys_total = 100000;  // keys per cell (rounded down to whole filters)
  int reps = 9;
  double min_ms = 8.0;  // least time of one timed measurement (for the fastest side)
  bool quick = false;
  std::string csv;
  bool reps_set = false, keys_set = false, min_set = false;

  // Takes --quick, --csv FILE, --reps N, --min-ms MS, --keys N; false for another argument.
  template <typename Value>
  bool ParseCommon(const std::string& a, Value value) {
    if (a == "--quick") return quick = true;
    if (a == "--csv") return csv = value(), true;
    if (a == "--reps") return reps = std::atoi(value()), reps_set = true;
    if (a == "--min-ms") return min_ms = std::atof(value()), min_set = true;
    if (a == "--keys") return keys_total = std::strtoull(value(), nullptr, 10), keys_set = true;
    return false;
  }

  // The smoke-test sizes of --quick, where not given.
  void QuickDefaults() {
    if (!reps_set) reps = 1;
    if (!min_set) min_ms = 0;
    if (!keys_set) keys_total = 3000;
  }
};

// A timing's repetitions: median, least and most.
struct Stat {
  double median = 0, min = 0, max = 0;
};

inline Stat Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stat s;
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  return s;
}

// How many passes over a cell make one timing last at least `min_ms` for the fastest side,
// which took `fastest_ns` for one pass (1 to 100,000).
inline int PassesFor(double fastest_ns, double min_ms) {
  double want = min_ms * 1e6;
  if (fastest_ns <= 0) return 1;
  int p = static_cast<int>(std::ceil(want / fastest_ns));
  return std::max(1, std::min(p, 100000));
}

// LevelDB's Bloom filter length for n keys: max(n * bpk, 64) bits in whole bytes, plus the
// k byte.
inline size_t BloomFilterBytes(size_t n, int bpk) {
  size_t bits = n * static_cast<size_t>(bpk);
  if (bits < 64) bits = 64;
  return (bits + 7) / 8 + 1;
}

inline std::string CellName(int bpk, int key_len, int kpf) {
  char b[96];
  std::snprintf(b, sizeof b, "bpk %d, %d-byte keys, %d keys per filter", bpk, key_len, kpf);
  return b;
}

inline double PeakRssMiB() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace bench

#endif  // LEVELDB_BLOOM_CPP_TESTS_SUPPORT_BENCH_H_
