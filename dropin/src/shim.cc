// The drop-in's leveldb::FilterPolicy: LevelDB's Bloom policy interface, answered by the
// leveldb-bloom C API. Built against LevelDB's installed headers so that its vtable is the
// one libleveldb expects.
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include <cstddef>
#include <new>
#include <string>

#include "leveldb_bloom.h"

// LevelDB hands CreateFilter an array of Slices; the C API reads it in place.
static_assert(sizeof(leveldb::Slice) == sizeof(leveldb_bloom_slice),
              "leveldb::Slice must be (data, size) to be read as leveldb_bloom_slice");

namespace {

// What every LevelDB reader answers "may match": used when no filter can be built.
constexpr char kAlwaysMatchFilter[2] = {0, 0};

class DropInBloomPolicy final : public leveldb::FilterPolicy {
 public:
  explicit DropInBloomPolicy(leveldb_bloom_policy* policy) : policy_(policy) {}
  ~DropInBloomPolicy() override { leveldb_bloom_policy_destroy(policy_); }
  DropInBloomPolicy(const DropInBloomPolicy&) = delete;
  DropInBloomPolicy& operator=(const DropInBloomPolicy&) = delete;

  const char* Name() const override { return leveldb_bloom_policy_name(policy_); }

  // Appends straight into LevelDB's string: no buffer of our own, no copy.
  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override {
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

  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override {
    return leveldb_bloom_key_may_match(policy_, key.data(), key.size(),
                                       reinterpret_cast<const uint8_t*>(filter.data()),
                                       filter.size());
  }

 private:
  leveldb_bloom_policy* const policy_;
};

}  // namespace

// Called by the Rust side's definition of leveldb::NewBloomFilterPolicy(int), which makes
// `policy` in the format the environment chose; the new object owns it. NULL (memory ran
// out) throws std::bad_alloc, as LevelDB's own `new` would.
extern "C" const leveldb::FilterPolicy* leveldb_bloom_dropin_new_filter_policy(
    leveldb_bloom_policy* policy) {
  if (policy == nullptr) throw std::bad_alloc();
  try {
    return new DropInBloomPolicy(policy);
  } catch (...) {
    leveldb_bloom_policy_destroy(policy);
    throw;
  }
}
