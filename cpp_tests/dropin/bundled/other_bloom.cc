// A LevelDB fork's Bloom policy that gives LevelDB's name, "leveldb.BuiltinBloomFilter2", to
// another filter, as Basho's leveldb (Riak's) does with a murmur-hashed, prime-sized one. It
// takes util/bloom.cc's place in a LevelDB built from source (CMakeLists.txt), so that the
// drop-in meets a LevelDB that does not speak its format: it must leave this LevelDB its own
// policy, since a filter of the drop-in's under this name would answer "no" for stored keys.
//
// Its filter: double hashing of LevelDB's hash and an FNV-1a hash over a prime number of bits
// (the largest prime not above the bits LevelDB would use), then the probe count.
#include <cstdint>
#include <string>

#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"
#include "util/hash.h"

namespace leveldb {
namespace {

uint32_t Fnv1a(const Slice& key) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < key.size(); i++) {
    h = (h ^ static_cast<uint8_t>(key[i])) * 16777619u;
  }
  return h;
}

bool IsPrime(size_t n) {
  if (n < 2) return false;
  for (size_t d = 2; d * d <= n; d++) {
    if (n % d == 0) return false;
  }
  return true;
}

// The largest prime at or below `bits` (at least 61).
size_t PrimeBits(size_t bits) {
  while (bits > 61 && !IsPrime(bits)) bits--;
  return bits;
}

class OtherBloomPolicy : public FilterPolicy {
 public:
  explicit OtherBloomPolicy(int bits_per_key) : bits_per_key_(bits_per_key) {
    k_ = static_cast<size_t>(bits_per_key * 0.69);
    if (k_ < 1) k_ = 1;
    if (k_ > 30) k_ = 30;
  }

  const char* Name() const override { return "leveldb.BuiltinBloomFilter2"; }

  void CreateFilter(const Slice* keys, int n, std::string* dst) const override {
    size_t bits = n * bits_per_key_;
    if (bits < 64) bits = 64;
    const size_t bytes = (bits + 7) / 8;
    const size_t prime = PrimeBits(bytes * 8);
    const size_t init_size = dst->size();
    dst->resize(init_size + bytes, 0);
    dst->push_back(static_cast<char>(k_));
    char* array = &(*dst)[init_size];
    for (int i = 0; i < n; i++) {
      const uint32_t h = Hash(keys[i].data(), keys[i].size(), 0xbc9f1d34);
      const uint32_t h2 = Fnv1a(keys[i]) | 1;
      for (size_t j = 0; j < k_; j++) {
        const size_t bit = (h + j * static_cast<uint64_t>(h2)) % prime;
        array[bit / 8] |= static_cast<char>(1 << (bit % 8));
      }
    }
  }

  bool KeyMayMatch(const Slice& key, const Slice& filter) const override {
    const size_t len = filter.size();
    if (len < 2) return false;
    const size_t k = static_cast<uint8_t>(filter[len - 1]);
    if (k > 30) return true;
    const size_t prime = PrimeBits((len - 1) * 8);
    const uint32_t h = Hash(key.data(), key.size(), 0xbc9f1d34);
    const uint32_t h2 = Fnv1a(key) | 1;
    for (size_t j = 0; j < k; j++) {
      const size_t bit = (h + j * static_cast<uint64_t>(h2)) % prime;
      if ((filter[bit / 8] & (1 << (bit % 8))) == 0) return false;
    }
    return true;
  }

 private:
  size_t bits_per_key_;
  size_t k_;
};

}  // namespace

const FilterPolicy* NewBloomFilterPolicy(int bits_per_key) {
  return new OtherBloomPolicy(bits_per_key);
}

}  // namespace leveldb
