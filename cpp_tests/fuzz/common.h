// Shared pieces of the libFuzzer harnesses in cpp_tests/fuzz/targets/: the input reader, the LevelDB
// oracle (its Bloom policy and its filter block classes from the static libleveldb.a), and
// the failure report.
//
// Every harness calls leveldb-bloom through its C API (include/leveldb_bloom.h) and compares
// with LevelDB 1.23 linked into the same binary, within LevelDB's defined behaviour. A
// mismatch, an undocumented status or LEVELDB_BLOOM_ERR_PANIC prints what differs and
// aborts, which libFuzzer records as a crash.
#ifndef LEVELDB_BLOOM_FUZZ_COMMON_H_
#define LEVELDB_BLOOM_FUZZ_COMMON_H_

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include <dlfcn.h>

#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"
#include "leveldb_bloom.h"

// LevelDB's FilterBlockBuilder/Reader (declared once, for the harness and the fuzzers), and
// the test-support library (cpp_tests/support/).
#include "leveldb_filter_block.h"
#include "support.h"

namespace fuzz {

constexpr uint64_t kWindow = 2048;  // one filter per 2 KiB of data-block offsets

// ---------------------------------------------------------------------------------------
// Failure reports.
// ---------------------------------------------------------------------------------------

using support::hex;
using support::status_name;

[[noreturn]] inline void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void fail(const char* fmt, ...) {
  std::fprintf(stderr, "\n==== leveldb-bloom fuzz FAILURE ====\n");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n====================================\n");
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ::fuzz::fail(__VA_ARGS__);                                                \
    }                                                                           \
  } while (0)

// A status must be exactly `want`; ERR_PANIC (a caught Rust panic) never is.
#define FUZZ_EXPECT_STATUS(got, want, ...)                                          \
  do {                                                                              \
    const int fuzz_got_ = (got);                                                    \
    const int fuzz_want_ = (want);                                                  \
    if (fuzz_got_ != fuzz_want_) {                                                  \
      std::fprintf(stderr, "at %s:%d: %s returned %d (%s), expected %d (%s)\n",     \
                   __FILE__, __LINE__, #got, fuzz_got_, ::fuzz::status_name(fuzz_got_), \
                   fuzz_want_, ::fuzz::status_name(fuzz_want_));                    \
      ::fuzz::fail(__VA_ARGS__);                                                    \
    }                                                                               \
  } while (0)

// ---------------------------------------------------------------------------------------
// Input decoding. Everything reads from the front; an exhausted input yields zeros and
// empty strings, so every byte string is a valid input.
// ---------------------------------------------------------------------------------------

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}

  bool empty() const { return n_ == 0; }
  size_t remaining() const { return n_; }

  uint8_t u8() {
    if (n_ == 0) return 0;
    n_--;
    return *p_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= uint32_t{u8()} << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= uint64_t{u8()} << (8 * i);
    return v;
  }
  // LEB128, at most 10 bytes (all 64 bits reachable).
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && n_ > 0; shift += 7) {
      const uint8_t b = u8();
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  // `len` bytes, or what is left.
  std::string bytes(uint64_t len) {
    const size_t take = len < n_ ? static_cast<size_t>(len) : n_;
    std::string s(reinterpret_cast<const char*>(p_), take);
    p_ += take;
    n_ -= take;
    return s;
  }
  // A byte string prefixed by its varint length.
  std::string lp_bytes() { return bytes(varint()); }

 private:
  const uint8_t* p_;
  size_t n_;
};

// Bytes in a heap buffer of exactly their size (a sentinel address for 0 bytes), so that
// AddressSanitizer's interceptors see any access past the end.
class ExactBuffer {
 public:
  explicit ExactBuffer(const std::string& s) : len_(s.size()) {
    buf_.reset(new uint8_t[len_ == 0 ? 1 : len_]);
    if (len_ > 0) std::memcpy(buf_.get(), s.data(), len_);
  }
  const uint8_t* data() const { return buf_.get(); }
  size_t size() const { return len_; }
  leveldb::Slice slice() const { return leveldb::Slice(reinterpret_cast<const char*>(data()), len_); }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t len_;
};

// Keys as the C API takes them (pointer and length arrays) and as LevelDB takes them.
struct KeySet {
  std::vector<std::string> keys;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  std::vector<leveldb::Slice> slices;
  std::vector<leveldb_bloom_slice> rust_slices;

  void add(std::string k) { keys.push_back(std::move(k)); }
  // Length-prefixed keys from the rest of `in` (at most `max_explicit`), then the keys
  // 0..synthetic-1 as 4-byte little-endian numbers; sealed.
  void read(Input& in, size_t max_explicit, uint32_t synthetic) {
    while (!in.empty() && keys.size() < max_explicit) add(in.lp_bytes());
    for (uint32_t i = 0; i < synthetic; i++) {
      char k[4];
      std::memcpy(k, &i, 4);  // little-endian host (x86_64)
      add(std::string(k, 4));
    }
    seal();
  }
  // Call after the last add: the arrays point into `keys`.
  void seal() {
    ptrs.clear();
    lens.clear();
    slices.clear();
    rust_slices.clear();
    for (const std::string& k : keys) {
      // (NULL, 0) is the empty key in the C API; pass it that way for some empty keys.
      const char* p = k.empty() && (ptrs.size() % 2 == 1) ? nullptr : k.data();
      ptrs.push_back(p);
      lens.push_back(k.size());
      slices.emplace_back(k.data(), k.size());
      rust_slices.push_back(leveldb_bloom_slice{p, k.size()});
    }
  }
  size_t size() const { return keys.size(); }
};

// ---------------------------------------------------------------------------------------
// Policies.
// ---------------------------------------------------------------------------------------

using support::RustPolicy;

// LevelDB's own policy for `bpk` (only for bpk >= 0: LevelDB's behaviour is undefined
// below). Cached: a policy is immutable.
inline const leveldb::FilterPolicy* leveldb_policy(int bpk) {
  if (bpk < 0) fail("leveldb_policy(%d): LevelDB is undefined for negative bits per key", bpk);
  return support::leveldb_policy(bpk);
}

// The oracle must be LevelDB's own Bloom policy, not leveldb-bloom's drop-in or anything
// else linked ahead of libleveldb.a (checked once at start-up).
inline void check_oracle() {
  const std::string problem = support::oracle_problem(support::LevelDBLink::kEither);
  if (!problem.empty()) fail("%s", problem.c_str());
}

// Known findings (cpp_tests/fuzz/README.md) that a harness can be told to step around, so that a long
// run looks for other bugs until they are fixed: LEVELDB_BLOOM_FUZZ_SKIP_KNOWN is a
// comma-separated list of their names, or "all". Unset, every check runs.
inline bool skip_known(const char* name) {
  static const std::string list = [] {
    const char* s = std::getenv("LEVELDB_BLOOM_FUZZ_SKIP_KNOWN");
    return "," + std::string(s == nullptr ? "" : s) + ",";
  }();
  return list.find(",all,") != std::string::npos ||
         list.find("," + std::string(name) + ",") != std::string::npos;
}

}  // namespace fuzz

// Every harness checks its oracle before the first input.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::check_oracle();
  return 0;
}

#endif  // LEVELDB_BLOOM_FUZZ_COMMON_H_
