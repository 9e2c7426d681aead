// The C++ test-support library, shared by the GoogleTest harness (cpp_tests/*_test.cc, through
// harness.h), the fuzzers (cpp_tests/fuzz/) and the benchmarks (benches/, through bench.h).
// Header-only and free of any test framework: what fails here says so in a return value, and
// each user reports it its own way (a gtest failure, a fuzzer crash, a benchmark abort).
//
// Nothing here encodes an expected result: every comparison is against the real LevelDB
// linked into the same program, and oracle_problem() checks that it really is LevelDB.
#ifndef LEVELDB_BLOOM_CPP_TESTS_SUPPORT_H_
#define LEVELDB_BLOOM_CPP_TESTS_SUPPORT_H_

#ifndef _WIN32
#include <dlfcn.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/table.h>

#include "leveldb_bloom.h"

// Exported by the drop-in library (dropin/src/lib.rs): the drop-in's
// `const leveldb::FilterPolicy*`, released with delete. Only programs that link the drop-in
// may call it.
extern "C" const void* leveldb_bloom_dropin_filter_policy_create(int bits_per_key);

namespace support {

// ---------------------------------------------------------------------------------------
// Bytes as text.
// ---------------------------------------------------------------------------------------

// Lower-case hex of `len` bytes, cut after `max` bytes with a note of the full length.
inline std::string hex(const void* data, size_t len, size_t max = SIZE_MAX) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string s;
  s.reserve(2 * (len < max ? len : max));
  for (size_t i = 0; i < len && i < max; i++) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  if (len > max) s += "...(" + std::to_string(len) + " bytes)";
  return s;
}
inline std::string hex(const std::string& s, size_t max = SIZE_MAX) {
  return hex(s.data(), s.size(), max);
}

// The name of a leveldb_bloom_status value, for failure messages.
inline const char* status_name(int status) {
  switch (status) {
    case LEVELDB_BLOOM_OK: return "OK";
    case LEVELDB_BLOOM_ERR_NULL_ARGUMENT: return "ERR_NULL_ARGUMENT";
    case LEVELDB_BLOOM_ERR_INVALID_ARGUMENT: return "ERR_INVALID_ARGUMENT";
    case LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL: return "ERR_BUFFER_TOO_SMALL";
    case LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS: return "ERR_OFFSET_BACKWARDS";
    case LEVELDB_BLOOM_ERR_ALREADY_FINISHED: return "ERR_ALREADY_FINISHED";
    case LEVELDB_BLOOM_ERR_PANIC: return "ERR_PANIC";
    case LEVELDB_BLOOM_ERR_TOO_LARGE: return "ERR_TOO_LARGE";
    case LEVELDB_BLOOM_ERR_OUT_OF_MEMORY: return "ERR_OUT_OF_MEMORY";
    default: return "UNDOCUMENTED STATUS";
  }
}

// ---------------------------------------------------------------------------------------
// Settings and arguments.
// ---------------------------------------------------------------------------------------

// Parses an unsigned integer (decimal, or hex with 0x) from the environment variable
// `name`; returns `dflt` if it is unset or empty. A malformed value aborts the program:
// silently ignoring it would hide a typo.
inline uint64_t env_count(const char* name, uint64_t dflt) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return dflt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 0);
  if (end == s || *end != '\0' || *s == '-') {
    std::fprintf(stderr, "%s=%s is not an unsigned integer\n", name, s);
    std::abort();
  }
  return static_cast<uint64_t>(v);
}

// A command line of flags and `--name value` options. `on(arg, value)` handles one argument
// (calling `value()` for its value) and returns false for one it does not know. --help and
// -h print the usage and exit 0; an unknown argument, or a missing value, prints it and
// exits 2.
template <typename On>
void parse_args(int argc, char** argv, void (*usage)(), On on) {
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    }
    if (!on(arg, value)) {
      usage();
      std::exit(2);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Keys.
// ---------------------------------------------------------------------------------------

// splitmix64: deterministic pseudo-random numbers and bytes, fast enough for hundreds of MB.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }  // bias irrelevant here
  void Fill(char* p, size_t n) {
    while (n >= 8) {
      uint64_t v = Next();
      std::memcpy(p, &v, 8);
      p += 8;
      n -= 8;
    }
    if (n > 0) {
      uint64_t v = Next();
      std::memcpy(p, &v, n);
    }
  }
};

// A key of exactly `len` arbitrary bytes (NUL and bytes >= 0x80 included).
inline std::string random_key_of_length(std::mt19937_64& rng, size_t len) {
  std::string key(len, '\0');
  uint64_t bits = 0;
  for (size_t i = 0; i < len; i++) {
    if (i % 8 == 0) bits = rng();
    key[i] = static_cast<char>(static_cast<unsigned char>(bits & 0xff));
    bits >>= 8;
  }
  return key;
}

// A key of 0..max_len arbitrary bytes. A quarter of the keys are at most 8 bytes long, so
// that every length of the hash's 1-3 byte tail and the empty key come up often.
inline std::string random_key(std::mt19937_64& rng, size_t max_len) {
  size_t len_max = max_len;
  if (rng() % 4 == 0 && len_max > 8) len_max = 8;
  return random_key_of_length(rng, static_cast<size_t>(rng() % (static_cast<uint64_t>(len_max) + 1)));
}

// `n` keys as a batch or a filter often holds them: all of one random length up to
// `max_len` half of the time (so that keys are hashed together, src/bloom/lanes.rs), else
// each of its own (random_key).
inline std::vector<std::string> random_keys(std::mt19937_64& rng, size_t n, size_t max_len) {
  std::vector<std::string> keys(n);
  const bool one_length = rng() % 2 == 0;
  const size_t len = static_cast<size_t>(rng() % (static_cast<uint64_t>(max_len) + 1));
  for (auto& k : keys) k = one_length ? random_key_of_length(rng, len) : random_key(rng, max_len);
  return keys;
}

// The C API's parallel key arrays (pointers and lengths) over `keys`, which must outlive
// them.
struct KeyArrays {
  explicit KeyArrays(const std::vector<std::string>& keys) {
    for (const std::string& k : keys) {
      ptrs.push_back(k.data());
      lens.push_back(k.size());
    }
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
};

// ---------------------------------------------------------------------------------------
// Policies: LevelDB's, the C API's, the drop-in's.
// ---------------------------------------------------------------------------------------

// A counting copy of `policy` (leveldb_bloom_policy_counted), which is destroyed; NULL if
// `policy` is NULL.
inline leveldb_bloom_policy* counted(leveldb_bloom_policy* policy) {
  leveldb_bloom_policy* c = leveldb_bloom_policy_counted(policy);
  leveldb_bloom_policy_destroy(policy);
  return c;
}

// Unique ownership of a leveldb_bloom_policy* (the C API).
struct RustPolicy {
  explicit RustPolicy(int bits_per_key) : p(leveldb_bloom_policy_create(bits_per_key)) {}
  explicit RustPolicy(leveldb_bloom_policy* policy) : p(policy) {}
  ~RustPolicy() { leveldb_bloom_policy_destroy(p); }
  RustPolicy(const RustPolicy&) = delete;
  RustPolicy& operator=(const RustPolicy&) = delete;
  RustPolicy(RustPolicy&& o) noexcept : p(o.p) { o.p = nullptr; }
  RustPolicy& operator=(RustPolicy&& o) noexcept {
    if (this != &o) {
      leveldb_bloom_policy_destroy(p);
      p = o.p;
      o.p = nullptr;
    }
    return *this;
  }
  leveldb_bloom_policy* get() const { return p; }
  // Gives up ownership (e.g. to LevelDB's leveldb_filterpolicy_create wrapper).
  leveldb_bloom_policy* release() {
    leveldb_bloom_policy* r = p;
    p = nullptr;
    return r;
  }

  leveldb_bloom_policy* p;
};

// LevelDB's own Bloom policy for `bits_per_key` >= 0 (LevelDB's behaviour is undefined
// below; NULL then). Cached per process: a policy is immutable.
inline const leveldb::FilterPolicy* leveldb_policy(int bits_per_key) {
  if (bits_per_key < 0) return nullptr;
  static std::vector<std::unique_ptr<const leveldb::FilterPolicy>> small(256);
  if (bits_per_key < 256) {
    auto& slot = small[static_cast<size_t>(bits_per_key)];
    if (!slot) slot.reset(leveldb::NewBloomFilterPolicy(bits_per_key));
    return slot.get();
  }
  static std::unique_ptr<const leveldb::FilterPolicy> big;
  static int big_bits_per_key = -1;
  if (big_bits_per_key != bits_per_key) {
    big.reset(leveldb::NewBloomFilterPolicy(bits_per_key));
    big_bits_per_key = bits_per_key;
  }
  return big.get();
}

// The drop-in's own policy object (for programs that link the drop-in after LevelDB).
inline std::unique_ptr<const leveldb::FilterPolicy> dropin_policy(int bits_per_key) {
  return std::unique_ptr<const leveldb::FilterPolicy>(static_cast<const leveldb::FilterPolicy*>(
      leveldb_bloom_dropin_filter_policy_create(bits_per_key)));
}

// Whether `policy` builds compact filters: a Bloom filter ends in its probe count (1..30),
// a compact one in its marker (31..255). Builds one filter of two keys to see.
inline bool builds_compact_filters(const leveldb::FilterPolicy* policy) {
  const leveldb::Slice keys[2] = {"a", "b"};
  std::string filter;
  policy->CreateFilter(keys, 2, &filter);
  return !filter.empty() && static_cast<unsigned char>(filter.back()) >= 31;
}

// The shared object that defines the code or data at `addr` ("?" when none: the executable
// itself, for a static archive; on Windows, where the suites link everything statically,
// always).
inline std::string library_of(const void* addr) {
#ifdef _WIN32
  (void)addr;
  return "?";
#else
  Dl_info info;
  if (addr == nullptr || dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
#endif
}

// The dynamic type's mangled name of a polymorphic object, or "" when its class was
// compiled without type information (-fno-rtti: the drop-in's policy, so that it links with
// LevelDB built either way), where typeid would crash. Itanium C++ ABI: the vtable's slot
// before the first virtual function points at the type info, or is null.
inline std::string dynamic_type_name(const void* object) {
  const void* const* vtable = *static_cast<const void* const* const*>(object);
  if (vtable[-1] == nullptr) return "";
  return static_cast<const std::type_info*>(vtable[-1])->name();
}

// Where LevelDB is linked from.
enum class LevelDBLink { kSharedLibrary, kStaticArchive, kEither };

// Why LevelDB's policy is not the oracle it must be, or "" when it is: a definition of
// leveldb::NewBloomFilterPolicy linked ahead of LevelDB (an interposer such as the drop-in)
// would replace it for C and C++ callers alike and make every comparison Rust against Rust.
// Also checks that the header and the library are the same version.
inline std::string oracle_problem(LevelDBLink link) {
  std::unique_ptr<const leveldb::FilterPolicy> p(leveldb::NewBloomFilterPolicy(10));
  const std::string type = dynamic_type_name(p.get());
  if (type != "N7leveldb12_GLOBAL__N_117BloomFilterPolicyE") {
    return "the oracle's policy is not LevelDB's Bloom policy (type " + type + ")";
  }
  const std::string where =
      library_of(reinterpret_cast<const void*>(&leveldb::NewBloomFilterPolicy));
  if (where.find("leveldb_bloom") != std::string::npos) {
    return "leveldb::NewBloomFilterPolicy comes from " + where + ", not LevelDB";
  }
  // Linked from the static archive, the definition is in the executable itself.
  const bool in_shared_leveldb = where.find("libleveldb.so") != std::string::npos;
  if (link != LevelDBLink::kEither &&
      in_shared_leveldb != (link == LevelDBLink::kSharedLibrary)) {
    return "leveldb::NewBloomFilterPolicy comes from " + where + ", not the expected " +
           (link == LevelDBLink::kSharedLibrary ? "libleveldb.so" : "static archive");
  }
  if (std::strcmp(leveldb_bloom_version(), LEVELDB_BLOOM_VERSION) != 0) {
    return std::string("header ") + LEVELDB_BLOOM_VERSION + " but library " +
           leveldb_bloom_version();
  }
  return "";
}

// ---------------------------------------------------------------------------------------
// LevelDB's own reading of a table file: the oracle for the leveldb-bloom command's reader.
// ---------------------------------------------------------------------------------------

// How many entries LevelDB's leveldb::Table iterates in the table of `size` bytes in `file`
// (paranoid checks, checksums verified), or -1 with LevelDB's message in `*error` if it
// cannot open or iterate it.
inline int64_t leveldb_table_entries(leveldb::RandomAccessFile* file, uint64_t size,
                                     std::string* error) {
  leveldb::Options options;
  options.paranoid_checks = true;
  leveldb::Table* opened = nullptr;
  leveldb::Status s = leveldb::Table::Open(options, file, size, &opened);
  if (!s.ok()) {
    *error = "leveldb::Table::Open: " + s.ToString();
    return -1;
  }
  std::unique_ptr<leveldb::Table> table(opened);
  leveldb::ReadOptions read;
  read.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read));
  int64_t entries = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) entries++;
  if (!it->status().ok()) {
    *error = "iterating: " + it->status().ToString();
    return -1;
  }
  return entries;
}

// The same for the table file at `path`.
inline int64_t leveldb_table_entries(const std::string& path, std::string* error) {
  leveldb::Env* env = leveldb::Env::Default();
  uint64_t size = 0;
  leveldb::RandomAccessFile* file = nullptr;
  leveldb::Status s = env->GetFileSize(path, &size);
  if (s.ok()) s = env->NewRandomAccessFile(path, &file);
  if (!s.ok()) {
    *error = s.ToString();
    return -1;
  }
  std::unique_ptr<leveldb::RandomAccessFile> owned(file);
  return leveldb_table_entries(file, size, error);
}

}  // namespace support

#endif  // LEVELDB_BLOOM_CPP_TESTS_SUPPORT_H_
