// The drop-in's policy object: a leveldb::FilterPolicy as LevelDB 1.20 to 1.23 call it,
// whose work is policy.rs's; the calls into a stock LevelDB policy's vtable; and the
// reference to LevelDB's C API that a static link resolves. C++ holds only what must be C++.
// (`NewBloomFilterPolicy` itself, which names the code that asked by its return address, is
// lib.rs's.)
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
using CreateFilterFn = void (*)(const LeveldbBloomDropinPolicy* policy, const Slice* keys, int n,
                                void* dst);
// The C API's answer for `answers` to arguments that passed leveldb_bloom_key_may_match's
// checks (policy.rs hands it over with each policy).
using QueryFn = bool (*)(const leveldb_bloom_policy* answers, const char* key, size_t key_len,
                         const char* filter, size_t filter_len);
using FreeFn = void (*)(LeveldbBloomDropinPolicy* policy);

namespace {

class DropInPolicy final {
 public:
  DropInPolicy(LeveldbBloomDropinPolicy* policy, const leveldb_bloom_policy* answers,
               QueryFn query, CreateFilterFn create_filter, FreeFn free)
      : policy_(policy),
        answers_(answers),
        query_(query),
        create_filter_(create_filter),
        free_(free) {}
  DropInPolicy(const DropInPolicy&) = delete;
  DropInPolicy& operator=(const DropInPolicy&) = delete;

  // leveldb::FilterPolicy's virtual functions, in its order.
  virtual ~DropInPolicy() { free_(policy_); }

  virtual const char* Name() const { return leveldb_bloom_policy_name(answers_); }

  // `dst` is the calling LevelDB's std::string.
  virtual void CreateFilter(const Slice* keys, int n, void* dst) const {
    create_filter_(policy_, keys, n, dst);
  }

  // The C API's query, reached in as few steps as LevelDB's own: its checks here, then the
  // function chosen for the policy (its format, the processor's instructions). A NULL or a
  // length no object can have goes to leveldb_bloom_key_may_match, which answers it.
  virtual bool KeyMayMatch(const Slice& key, const Slice& filter) const {
    if (key.data == nullptr || filter.data == nullptr ||
        (key.size | filter.size) > static_cast<size_t>(PTRDIFF_MAX)) {
      return leveldb_bloom_key_may_match(answers_, key.data, key.size,
                                         reinterpret_cast<const uint8_t*>(filter.data),
                                         filter.size);
    }
    return query_(answers_, key.data, key.size, filter.data, filter.size);
  }

 private:
  LeveldbBloomDropinPolicy* const policy_;
  const leveldb_bloom_policy* const answers_;
  const QueryFn query_;
  const CreateFilterFn create_filter_;
  const FreeFn free_;
};

}  // namespace

// A new policy object, as LevelDB's `const leveldb::FilterPolicy*`, released by LevelDB with
// `delete` (policy.rs): it answers with `answers` and writes through `create_filter`. A failed
// `new` throws std::bad_alloc, as LevelDB's own would; the caller then still owns `policy`.
extern "C" const void* leveldb_bloom_dropin_object_new(LeveldbBloomDropinPolicy* policy,
                                                       const leveldb_bloom_policy* answers,
                                                       QueryFn query,
                                                       CreateFilterFn create_filter,
                                                       FreeFn free) {
  return new DropInPolicy(policy, answers, query, create_filter, free);
}

// A stock policy's Name, CreateFilter (with that LevelDB's own string code), KeyMayMatch, and
// its deletion (speaks.rs, policy.rs).
extern "C" const char* leveldb_bloom_dropin_stock_name(const void* stock) {
  return static_cast<const LevelDbPolicy*>(stock)->Name();
}

extern "C" void leveldb_bloom_dropin_stock_create_filter(const void* stock, const Slice* keys,
                                                         int n, void* dst) {
  static_cast<const LevelDbPolicy*>(stock)->CreateFilter(keys, n, dst);
}

extern "C" bool leveldb_bloom_dropin_stock_key_may_match(const void* stock, const char* key,
                                                         size_t key_len, const char* filter,
                                                         size_t filter_len) {
  const Slice k{key, key_len}, f{filter, filter_len};
  return static_cast<const LevelDbPolicy*>(stock)->KeyMayMatch(k, f);
}

extern "C" void leveldb_bloom_dropin_stock_delete(const void* stock) {
  delete static_cast<const LevelDbPolicy*>(stock);
}

// LevelDB's C API (include/leveldb/c.h), as the program was linked: where the drop-in is part
// of the program (the static route), the program's `leveldb_filterpolicy_create`, if the link
// brought LevelDB's db/c.cc in (a C program does; a C++ one by `-u leveldb_filterpolicy_create`).
// Weak, so that a link without it still links, and so that the shared drop-in, which never
// uses this in a process it was preloaded into, loads everywhere. Windows programs are linked
// with LevelDB's library, which always holds it: there the reference is strong, and a program
// whose LevelDB lacks it does not link.
extern "C" {
struct leveldb_filterpolicy_t;
#ifdef _WIN32
#define LEVELDB_BLOOM_LINKED
#else
#define LEVELDB_BLOOM_LINKED __attribute__((weak))
#endif
LEVELDB_BLOOM_LINKED leveldb_filterpolicy_t* leveldb_filterpolicy_create(
    void* state, void (*destructor)(void*),
    char* (*create_filter)(void*, const char* const* key_array, const size_t* key_length_array,
                           int num_keys, size_t* filter_length),
    unsigned char (*key_may_match)(void*, const char* key, size_t length, const char* filter,
                                   size_t filter_length),
    const char* (*name)(void*));
}

extern "C" void* leveldb_bloom_dropin_linked_c_api() {
  return reinterpret_cast<void*>(&leveldb_filterpolicy_create);
}

#ifndef _WIN32
// LevelDB's `PutVarint32(std::string*, uint32_t)` (util/coding.cc, in every link that writes
// a table), under each libstdc++ layout's name, as the program was linked: weak, so that the
// one the link brought in names the layout of that LevelDB's strings.
extern "C" void leveldb_bloom_put_varint32_cxx11()
    __asm__("_ZN7leveldb11PutVarint32EPNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEj")
    __attribute__((weak));
extern "C" void leveldb_bloom_put_varint32_old() __asm__("_ZN7leveldb11PutVarint32EPSsj")
    __attribute__((weak));

extern "C" void* leveldb_bloom_dropin_linked_put_varint32(int cxx11) {
  return cxx11 ? reinterpret_cast<void*>(&leveldb_bloom_put_varint32_cxx11)
               : reinterpret_cast<void*>(&leveldb_bloom_put_varint32_old);
}
#endif
