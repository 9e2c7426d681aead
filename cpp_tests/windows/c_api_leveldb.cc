// The part of a LevelDB the Windows drop-in needs (dropin/src/policy.cc): LevelDB's C API,
// `leveldb_filterpolicy_create`, whose wrapper writes the filters with LevelDB's own string
// code. scripts/windows links this with the static drop-in with and without it
// (-DWITH_C_API): a LevelDB whose library holds it links (in either std::string layout: the
// drop-in writes no string itself); one without does not, rather than run without filters.
#include <string>

#ifdef WITH_C_API
extern "C" void* leveldb_filterpolicy_create(void*, void (*)(void*),
                                             char* (*)(void*, const char* const*, const size_t*,
                                                       int, size_t*),
                                             unsigned char (*)(void*, const char*, size_t,
                                                               const char*, size_t),
                                             const char* (*)(void*)) {
  return nullptr;
}
#endif

namespace leveldb {
// The drop-in's definition (a pointer out, as LevelDB's FilterPolicy* is).
const void* NewBloomFilterPolicy(int bits_per_key);
}  // namespace leveldb

int main() { return leveldb::NewBloomFilterPolicy(10) != nullptr; }
