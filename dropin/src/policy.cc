// The drop-in's policy object: a leveldb::FilterPolicy as LevelDB 1.20 to 1.23 call it,
// whose work is policy.rs's. C++ holds only what must be C++: the vtable LevelDB calls
// through, and the calls into a stock LevelDB policy's vtable. (`NewBloomFilterPolicy`
// itself, which names the code that asked by its return address, is lib.rs's.)
//
// LevelDB's header is not included: deriving from leveldb::FilterPolicy would make the
// drop-in depend on a libleveldb for the base class's destructor, and preloading it would
// then bring a second LevelDB into programs that carry their own. The classes declare
// LevelDB's virtual functions themselves, in LevelDB's order (include/leveldb/filter_policy.h:
// the destructor, Name, CreateFilter, KeyMayMatch), which under the Itanium C++ ABI gives
// the vtable LevelDB calls through; leveldb::Slice is a pointer and a size in every version.
// The C++ suites call the object through LevelDB's own declarations.
#include <cstddef>
#include <cstdint>
#include <new>

#include "leveldb_bloom.h"

namespace leveldb_bloom_dropin {

struct Slice;

// LevelDB's filter policy interface, as a stock LevelDB's own objects implement it: the
// vtable through which the drop-in calls (and deletes) a stock policy. Not in an anonymous
// namespace: the compiler would then know every class derived from it (none here) and turn
// the calls into calls of the pure functions.
class LevelDbPolicy {
 public:
  virtual ~LevelDbPolicy() = default;
  virtual const char* Name() const = 0;
  virtual void CreateFilter(const Slice* keys, int n, void* dst) const = 0;
  virtual bool KeyMayMatch(const Slice& key, const Slice& filter) const = 0;
};

// leveldb::Slice (include/leveldb/slice.h): its two members, in order.
struct Slice {
  const char* data;
  size_t size;
};

}  // namespace leveldb_bloom_dropin

using leveldb_bloom_dropin::LevelDbPolicy;
using leveldb_bloom_dropin::Slice;

static_assert(sizeof(Slice) == sizeof(leveldb_bloom_slice) &&
                  offsetof(Slice, data) == offsetof(leveldb_bloom_slice, data) &&
                  offsetof(Slice, size) == offsetof(leveldb_bloom_slice, len),
              "leveldb::Slice must be (data, size) to be read as leveldb_bloom_slice");

// policy.rs's side of a policy (opaque here), and the functions through which the object
// calls it (handed over with each policy, so that the library exports none of them).
struct LeveldbBloomDropinPolicy;
using QueryFn = bool (*)(const LeveldbBloomDropinPolicy* policy, const char* key, size_t key_len,
                         const char* filter, size_t filter_len);
using CreateFilterFn = void (*)(const LeveldbBloomDropinPolicy* policy, const void* caller,
                                const Slice* keys, int n, void* dst);
using FreeFn = void (*)(LeveldbBloomDropinPolicy* policy);

namespace {

// An address inside the calling instruction (the return address may be the first byte
// after the caller's function).
#define LEVELDB_BLOOM_CALLER \
  (static_cast<const char*>(__builtin_extract_return_addr(__builtin_return_address(0))) - 1)

class DropInBloomPolicy final {
 public:
  DropInBloomPolicy(LeveldbBloomDropinPolicy* policy, const char* name, QueryFn query,
                    CreateFilterFn create_filter, FreeFn free)
      : policy_(policy),
        name_(name),
        query_(query),
        create_filter_(create_filter),
        free_(free) {}
  DropInBloomPolicy(const DropInBloomPolicy&) = delete;
  DropInBloomPolicy& operator=(const DropInBloomPolicy&) = delete;

  // leveldb::FilterPolicy's virtual functions, in its order.
  virtual ~DropInBloomPolicy() { free_(policy_); }

  virtual const char* Name() const { return name_; }

  // `dst` is the calling LevelDB's std::string. Not inlined: the return address must be
  // LevelDB's.
  __attribute__((noinline)) virtual void CreateFilter(const Slice* keys, int n,
                                                      void* dst) const {
    create_filter_(policy_, LEVELDB_BLOOM_CALLER, keys, n, dst);
  }

  // A jump to the query chosen for the policy (policy.rs), LevelDB's pointers and lengths
  // passed on as they are.
  virtual bool KeyMayMatch(const Slice& key, const Slice& filter) const {
    return query_(policy_, key.data, key.size, filter.data, filter.size);
  }

 private:
  LeveldbBloomDropinPolicy* const policy_;
  const char* const name_;
  const QueryFn query_;
  const CreateFilterFn create_filter_;
  const FreeFn free_;
};

}  // namespace

// A new policy object, as LevelDB's `const leveldb::FilterPolicy*`, released by LevelDB with
// `delete` (policy.rs). A failed `new` throws std::bad_alloc, as LevelDB's own would; the
// caller then still owns `policy`.
extern "C" const void* leveldb_bloom_dropin_object_new(LeveldbBloomDropinPolicy* policy,
                                                       const char* name, QueryFn query,
                                                       CreateFilterFn create_filter,
                                                       FreeFn free) {
  return new DropInBloomPolicy(policy, name, query, create_filter, free);
}

// A stock policy's filter, written with that LevelDB's own string code (policy.rs).
extern "C" void leveldb_bloom_dropin_stock_create_filter(const void* stock, const Slice* keys,
                                                         int n, void* dst) {
  static_cast<const LevelDbPolicy*>(stock)->CreateFilter(keys, n, dst);
}

extern "C" void leveldb_bloom_dropin_stock_delete(const void* stock) {
  delete static_cast<const LevelDbPolicy*>(stock);
}

extern "C" void leveldb_bloom_dropin_stock_create_filter_with(const void* (*make)(int), int bits,
                                                              const Slice* keys, int n,
                                                              void* dst) {
  const auto* stock = static_cast<const LevelDbPolicy*>(make(bits));
  if (stock == nullptr) throw std::bad_alloc();
  try {
    stock->CreateFilter(keys, n, dst);
  } catch (...) {
    delete stock;
    throw;
  }
  delete stock;
}
