// One std::string layout's own code, compiled once per layout of libstdc++
// (_GLIBCXX_USE_CXX11_ABI=1, the default since GCC 5, and =0, which programs built to run on
// many distributions still use): the only code of the drop-in that touches a LevelDB's
// string. owner.rs proves which one a LevelDB's strings need, and that the library code it
// calls is the very code that LevelDB's strings use.
#include <string>

#include "string_ops.h"

#ifndef LEVELDB_BLOOM_DROPIN_STRING_OPS
#error "LEVELDB_BLOOM_DROPIN_STRING_OPS must name this layout's operations"
#endif

namespace {

size_t Size(const void* s) { return static_cast<const std::string*>(s)->size(); }

char* Resize(void* s, size_t n) {
  auto* str = static_cast<std::string*>(s);
  str->resize(n);
  return &(*str)[0];
}

}  // namespace

extern "C" const leveldb_bloom_dropin_string_ops LEVELDB_BLOOM_DROPIN_STRING_OPS = {Size, Resize};
