// The drop-in's policy object: a leveldb::FilterPolicy as LevelDB 1.20 to 1.23 call it,
// answered by the leveldb-bloom C API.
//
// LevelDB's header is not included: deriving from leveldb::FilterPolicy would make the
// drop-in depend on a libleveldb for the base class's destructor, and preloading it would
// then bring a second LevelDB into programs that carry their own. The class declares
// LevelDB's virtual functions itself, in LevelDB's order (include/leveldb/filter_policy.h:
// the destructor, Name, CreateFilter, KeyMayMatch), which under the Itanium C++ ABI gives
// the vtable LevelDB calls through; leveldb::Slice is a pointer and a size in every version.
// The C++ suites call the object through LevelDB's own declarations.
//
// Compiled once, with no std::string: CreateFilter's string belongs to the LevelDB that
// calls it, whose layout and library the drop-in proves before it writes (owner.rs), and
// grows only through that layout's own string code (string_ops.cc). Where it cannot prove
// them, that LevelDB's own Bloom policy writes the filter (LevelDB's bytes either way).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "leveldb_bloom.h"
#include "string_ops.h"

namespace leveldb_bloom_dropin {

struct Slice;

// LevelDB's filter policy interface, as a LevelDB's own objects implement it: the vtable
// through which the drop-in calls (and deletes) the policy of the LevelDB it declines. Not in
// an anonymous namespace: the compiler would then know every class derived from it (none
// here) and turn the calls into calls of the pure functions.
class LevelDbPolicy {
 public:
  virtual ~LevelDbPolicy() = default;
  virtual const char* Name() const = 0;
  virtual void CreateFilter(const Slice* keys, int n, void* dst) const = 0;
  virtual bool KeyMayMatch(const Slice& key, const Slice& filter) const = 0;
};

}  // namespace leveldb_bloom_dropin

namespace {

using leveldb_bloom_dropin::LevelDbPolicy;

}  // namespace

// leveldb::Slice (include/leveldb/slice.h): its two members, in order.
struct leveldb_bloom_dropin::Slice {
  const char* data;
  size_t size;
};

namespace {

using leveldb_bloom_dropin::Slice;
static_assert(sizeof(Slice) == sizeof(leveldb_bloom_slice),
              "leveldb::Slice must be (data, size) to be read as leveldb_bloom_slice");

// What every LevelDB reader answers "may match": used when no filter can be built.
constexpr char kAlwaysMatchFilter[2] = {0, 0};

// An address inside the calling instruction (the return address may be the first byte
// after the caller's function).
#define LEVELDB_BLOOM_CALLER \
  (static_cast<const char*>(__builtin_extract_return_addr(__builtin_return_address(0))) - 1)

class DropInBloomPolicy final {
 public:
  DropInBloomPolicy(leveldb_bloom_policy* policy, int bloom_bits_per_key,
                    const leveldb_bloom_dropin_hooks* hooks)
      : policy_(policy), bloom_bits_per_key_(bloom_bits_per_key), hooks_(hooks) {}
  DropInBloomPolicy(const DropInBloomPolicy&) = delete;
  DropInBloomPolicy& operator=(const DropInBloomPolicy&) = delete;

  // leveldb::FilterPolicy's virtual functions, in its order.
  virtual ~DropInBloomPolicy() { leveldb_bloom_policy_destroy(policy_); }

  virtual const char* Name() const { return leveldb_bloom_policy_name(policy_); }

  // `dst` is the calling LevelDB's std::string. Not inlined: the return address must be
  // LevelDB's.
  __attribute__((noinline)) virtual void CreateFilter(const Slice* keys, int n,
                                                      void* dst) const {
    const void* caller = LEVELDB_BLOOM_CALLER;
    const leveldb_bloom_dropin_decision* d = decision_.load(std::memory_order_acquire);
    if (d == nullptr || d->caller != caller) {
      d = hooks_->decide(caller);
      decision_.store(d, std::memory_order_release);
    }
    if (d->string_ops != nullptr) {
      Append(keys, n, dst, d->string_ops);
    } else {
      ByOwnPolicy(keys, n, dst, d);
    }
  }

  virtual bool KeyMayMatch(const Slice& key, const Slice& filter) const {
    return leveldb_bloom_key_may_match(policy_, key.data, key.size,
                                       reinterpret_cast<const uint8_t*>(filter.data),
                                       filter.size);
  }

 private:
  // Appends the filter straight into the string (no buffer of our own, no copy), grown by
  // its own layout's code.
  void Append(const Slice* keys, int n, void* dst, const leveldb_bloom_dropin_string_ops* ops) const {
    const size_t num_keys = n > 0 ? static_cast<size_t>(n) : 0;
    const size_t start = ops->size(dst);
    const size_t len = leveldb_bloom_filter_len(policy_, num_keys);
    if (len != 0) {
      char* at = ops->resize(dst, start + len) + start;
      size_t written = 0;
      const int status = leveldb_bloom_create_filter_slices(
          policy_, reinterpret_cast<const leveldb_bloom_slice*>(keys), num_keys,
          reinterpret_cast<uint8_t*>(at), len, &written);
      if (status == LEVELDB_BLOOM_OK && written == len) return;
    }
    char* at = ops->resize(dst, start + sizeof(kAlwaysMatchFilter)) + start;
    for (char c : kAlwaysMatchFilter) *at++ = c;
  }

  // The declined LevelDB's own Bloom policy writes the filter, with its own string code.
  void ByOwnPolicy(const Slice* keys, int n, void* dst,
                   const leveldb_bloom_dropin_decision* d) const {
    if (d->own_policy == nullptr) {
      // Unreachable through LevelDB as it is built (docs/drop-in.md): a LevelDB that hides
      // its own NewBloomFilterPolicy and was handed this object by other code. Leaving the
      // filter empty would hide the table's keys; stopping before the table is written
      // loses nothing that the write-ahead log does not hold.
      fprintf(stderr, "leveldb-bloom: %s; stopping before a table with no filter is written\n",
              d->reason);
      abort();
    }
    const auto* own = static_cast<const LevelDbPolicy*>(d->own_policy(bloom_bits_per_key_));
    if (own == nullptr) throw std::bad_alloc();
    own->CreateFilter(keys, n, dst);
    delete own;
    hooks_->count_own_filter();
  }

  leveldb_bloom_policy* const policy_;
  // The bits per key a declined LevelDB's own policy is made with.
  const int bloom_bits_per_key_;
  const leveldb_bloom_dropin_hooks* const hooks_;
  mutable std::atomic<const leveldb_bloom_dropin_decision*> decision_{nullptr};
};

}  // namespace

// A new policy object that owns `policy` (made by lib.rs in the format the environment
// chose) and calls `hooks` (static), returned as LevelDB's `const leveldb::FilterPolicy*`, released by LevelDB with
// `delete`. NULL (memory ran out) throws std::bad_alloc, as LevelDB's own `new` would.
extern "C" const void* leveldb_bloom_dropin_new_policy(leveldb_bloom_policy* policy,
                                                       int bloom_bits_per_key,
                                                       const leveldb_bloom_dropin_hooks* hooks) {
  if (policy == nullptr) throw std::bad_alloc();
  try {
    return new DropInBloomPolicy(policy, bloom_bits_per_key, hooks);
  } catch (...) {
    leveldb_bloom_policy_destroy(policy);
    throw;
  }
}
