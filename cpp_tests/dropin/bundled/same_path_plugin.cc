// A plugin with LevelDB's Bloom policy compiled in (util/bloom.cc and what it needs), built
// once per std::string layout, which uses the policy as LevelDB does: CreateFilter into a
// string holding other bytes, shared copy-on-write with another in the old layout, then
// KeyMayMatch. reload_host.c loads one build, unloads it and loads the other under the same
// file name; built so that both have their dynamic section at the same offset
// (CMakeLists.txt), the loader can give the second the first's address, link map and
// dynamic section address: only what the builds contain tells them apart.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"

namespace leveldb {
// A LevelDB function taking a std::string, as DB::Open and DestroyDB are: it names the
// layout.
__attribute__((visibility("default"), noinline)) size_t DescribeFilter(const std::string& s) {
  return s.size();
}
}  // namespace leveldb

extern "C" int dropin_workload_main(int, char**) {
  const leveldb::FilterPolicy* p = leveldb::NewBloomFilterPolicy(10);
  std::string keys[200];
  leveldb::Slice slices[200];
  for (int i = 0; i < 200; i++) {
    char b[32];
    std::snprintf(b, sizeof b, "key-number-%d", i);
    keys[i] = b;
    slices[i] = keys[i];
  }
  int bad = 0;
  unsigned long long h = 1469598103934665603ULL;
  for (int round = 0; round < 50; round++) {
    char prefix[64];
    std::snprintf(prefix, sizeof prefix, "a-prefix-long-enough-to-be-on-the-heap-%d", round);
    std::string dst = prefix;
    std::string copy = dst;  // the old layout shares the representation
    p->CreateFilter(slices, 200, &dst);
    const leveldb::Slice filter(dst.data() + copy.size(), dst.size() - copy.size());
    for (int i = 0; i < 200; i++) bad += !p->KeyMayMatch(slices[i], filter);
    for (unsigned char c : dst) h = (h ^ c) * 1099511628211ULL;
    if (copy != prefix) bad += 1000;
  }
  // The filters' digest where they are LevelDB's Bloom filters (compact ones differ).
  const char* format = std::getenv("LEVELDB_BLOOM_FORMAT");
  const bool compact = format != nullptr && std::string(format) == "compact";
  std::printf("policy=%s described=%zu false_negatives=%d", p->Name(),
              leveldb::DescribeFilter(std::string(10, 'x')), bad);
  if (!compact) std::printf(" digest=%016llx", h);
  std::printf("\n");
  std::fflush(stdout);
  delete p;
  return bad != 0;
}
