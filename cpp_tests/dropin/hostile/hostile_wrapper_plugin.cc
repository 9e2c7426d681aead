// A plugin's wrapper policy, as programs write them to count or log their filters: it owns
// LevelDB's Bloom policy and forwards every call to it, so the drop-in's CreateFilter is
// called from this object, not from LevelDB's (hostile.cc's wrapper mode).
#include <atomic>

#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

namespace {

class CountingPolicy final : public leveldb::FilterPolicy {
 public:
  explicit CountingPolicy(const leveldb::FilterPolicy* inner) : inner_(inner) {}
  ~CountingPolicy() override { delete inner_; }
  const char* Name() const override { return inner_->Name(); }
  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override {
    filters_++;
    inner_->CreateFilter(keys, n, dst);
  }
  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override {
    queries_++;
    return inner_->KeyMayMatch(key, filter);
  }

 private:
  const leveldb::FilterPolicy* const inner_;
  mutable std::atomic<long> filters_{0}, queries_{0};
};

}  // namespace

extern "C" const leveldb::FilterPolicy* hostile_wrapped_policy(int bits_per_key) {
  return new CountingPolicy(leveldb::NewBloomFilterPolicy(bits_per_key));
}
