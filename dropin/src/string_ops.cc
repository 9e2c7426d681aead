// One std::string layout's own code, compiled once per layout of libstdc++
// (_GLIBCXX_USE_CXX11_ABI=1, the default since GCC 5, and =0, which programs built to run on
// many distributions still use): the only code of the drop-in that touches a LevelDB's
// string, and only on the static route where the link brought no code of LevelDB's to write
// with. There the drop-in and that LevelDB are one link, with one libstdc++, and the layout is
// the one LevelDB's own functions were linked in (leveldb.rs); policy.rs calls these two.
#include <cstddef>
#include <string>

#ifndef LEVELDB_BLOOM_DROPIN_LAYOUT
#error "LEVELDB_BLOOM_DROPIN_LAYOUT must name this layout (cxx11 or old)"
#endif
#define LEVELDB_BLOOM_CONCAT2(a, b) a##b
#define LEVELDB_BLOOM_CONCAT(a, b) LEVELDB_BLOOM_CONCAT2(a, b)
#define LEVELDB_BLOOM_SIZE LEVELDB_BLOOM_CONCAT(leveldb_bloom_dropin_string_size_, LEVELDB_BLOOM_DROPIN_LAYOUT)
#define LEVELDB_BLOOM_RESIZE LEVELDB_BLOOM_CONCAT(leveldb_bloom_dropin_string_resize_, LEVELDB_BLOOM_DROPIN_LAYOUT)

// The string's size.
extern "C" size_t LEVELDB_BLOOM_SIZE(const void* s) {
  return static_cast<const std::string*>(s)->size();
}

// Resizes the string to `n` characters (throws as std::string's resize does) and returns them.
extern "C" char* LEVELDB_BLOOM_RESIZE(void* s, size_t n) {
  auto* str = static_cast<std::string*>(s);
  str->resize(n);
  return &(*str)[0];
}
