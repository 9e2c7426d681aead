// The drop-in's policy object: a leveldb::FilterPolicy as LevelDB 1.20 to 1.23 call it,
// answered by the leveldb-bloom C API.
//
// Compiled twice, once for each of libstdc++'s std::string layouts (_GLIBCXX_USE_CXX11_ABI=1,
// the default since GCC 5, and =0, which programs built to run on many distributions still
// use). CreateFilter appends to the string LevelDB hands it, so the object that serves a
// LevelDB must be built with that LevelDB's string; LEVELDB_BLOOM_DROPIN_NEW_POLICY names this
// copy's constructor, and caller.rs chooses which copy serves which LevelDB.
//
// LevelDB's header is not included: deriving from leveldb::FilterPolicy would make the
// drop-in depend on a libleveldb for the base class's destructor, and preloading it would
// then bring a second LevelDB into programs that carry their own. The class declares
// LevelDB's virtual functions itself, in LevelDB's order (include/leveldb/filter_policy.h:
// the destructor, Name, CreateFilter, KeyMayMatch), which under the Itanium C++ ABI gives
// the vtable LevelDB calls through; leveldb::Slice is a pointer and a size in every version.
// The C++ suites call the object through LevelDB's own declarations.
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

#include "leveldb_bloom.h"

#ifndef LEVELDB_BLOOM_DROPIN_NEW_POLICY
#error "LEVELDB_BLOOM_DROPIN_NEW_POLICY must name this string layout's constructor"
#endif

namespace {

// leveldb::Slice (include/leveldb/slice.h): its two members, in order.
struct Slice {
  const char* data;
  size_t size;
};
static_assert(sizeof(Slice) == sizeof(leveldb_bloom_slice),
              "leveldb::Slice must be (data, size) to be read as leveldb_bloom_slice");

// What every LevelDB reader answers "may match": used when no filter can be built.
constexpr char kAlwaysMatchFilter[2] = {0, 0};

class DropInBloomPolicy final {
 public:
  explicit DropInBloomPolicy(leveldb_bloom_policy* policy) : policy_(policy) {}
  DropInBloomPolicy(const DropInBloomPolicy&) = delete;
  DropInBloomPolicy& operator=(const DropInBloomPolicy&) = delete;

  // leveldb::FilterPolicy's virtual functions, in its order.
  virtual ~DropInBloomPolicy() { leveldb_bloom_policy_destroy(policy_); }

  virtual const char* Name() const { return leveldb_bloom_policy_name(policy_); }

  // Appends straight into LevelDB's string: no buffer of our own, no copy.
  virtual void CreateFilter(const Slice* keys, int n, std::string* dst) const {
    const size_t num_keys = n > 0 ? static_cast<size_t>(n) : 0;
    const size_t start = dst->size();
    const size_t len = leveldb_bloom_filter_len(policy_, num_keys);
    if (len != 0) {
      dst->resize(start + len);
      size_t written = 0;
      const int status = leveldb_bloom_create_filter_slices(
          policy_, reinterpret_cast<const leveldb_bloom_slice*>(keys), num_keys,
          reinterpret_cast<uint8_t*>(&(*dst)[start]), len, &written);
      if (status == LEVELDB_BLOOM_OK && written == len) return;
      dst->resize(start);
    }
    dst->append(kAlwaysMatchFilter, sizeof(kAlwaysMatchFilter));
  }

  virtual bool KeyMayMatch(const Slice& key, const Slice& filter) const {
    return leveldb_bloom_key_may_match(policy_, key.data, key.size,
                                       reinterpret_cast<const uint8_t*>(filter.data),
                                       filter.size);
  }

 private:
  leveldb_bloom_policy* const policy_;
};

}  // namespace

// A new policy object that owns `policy` (made by lib.rs in the format the environment
// chose), returned as LevelDB's `const leveldb::FilterPolicy*`, released by LevelDB with
// `delete`. NULL (memory ran out) throws std::bad_alloc, as LevelDB's own `new` would.
extern "C" const void* LEVELDB_BLOOM_DROPIN_NEW_POLICY(leveldb_bloom_policy* policy) {
  if (policy == nullptr) throw std::bad_alloc();
  try {
    return new DropInBloomPolicy(policy);
  } catch (...) {
    leveldb_bloom_policy_destroy(policy);
    throw;
  }
}
