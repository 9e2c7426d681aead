// The benchmarks' part of the test-support library (benches/*.cc): the machine header, the
// check that each symbol comes from the library it must come from, timing, peak memory, a
// sink. Keys, arguments and library lookups come from support.h.
#ifndef LEVELDB_BLOOM_CPP_TESTS_SUPPORT_BENCH_H_
#define LEVELDB_BLOOM_CPP_TESTS_SUPPORT_BENCH_H_

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

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

template <typename T>
void Shuffle(T* a, size_t n, Rng& rng) {
  for (size_t i = n; i > 1; i--) {
    size_t j = rng.Below(i);
    T t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

inline std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) model = line.substr(c + 2);
      break;
    }
  }
  return model;
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
  struct utsname u;
  uname(&u);
  std::printf("%s\n", program);
  std::printf("machine: %s, %d cores (%s %s), load average %s at start\n", CpuModel().c_str(),
              CpuCount(), u.sysname, u.release, LoadAvg().c_str());
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
  if (print) std::printf("  %-48s %s\n", what, lib.c_str());
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

inline double PeakRssMiB() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace bench

#endif  // LEVELDB_BLOOM_CPP_TESTS_SUPPORT_BENCH_H_
