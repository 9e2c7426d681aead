// The part of a LevelDB the Windows drop-in's link-time proof looks at (dropin/src/
// linked_windows.cc): `leveldb::DestroyDB`, compiled with the std::string layout this file is
// built with (-D_GLIBCXX_USE_CXX11_ABI=0 or 1). scripts/windows links it with the static
// drop-in both ways: the program links with the drop-in's own layout and must not link with
// the other, which the drop-in would otherwise write filters into.
#include <string>

namespace leveldb {
struct Options;
class Status {};
Status DestroyDB(const std::string&, const Options&) { return Status(); }
// The drop-in's definition (a pointer out, as LevelDB's FilterPolicy* is).
const void* NewBloomFilterPolicy(int bits_per_key);
}  // namespace leveldb

int main() { return leveldb::NewBloomFilterPolicy(10) == nullptr; }
