// The drop-in on Windows (MinGW-w64), where it can only be linked into the program with
// LevelDB: there is no preload, and no dynamic symbol table to read a LevelDB's string layout
// from. So the layout is proven when the program links, not when it runs.
//
// This file is compiled with the compiler's default std::string layout (MinGW's GCC: the C++11
// one). The function below, which every decision of a Windows drop-in calls, refers to
// LevelDB's `leveldb::DestroyDB(const std::string&, const Options&)` (db_impl.cc, in LevelDB
// 1.20 to 1.23 alike, and in every program that opens a database) in that layout: a LevelDB
// built with the other layout defines the other name, the reference stays unresolved, and the
// program does not link. A program that links runs with its LevelDB's strings written by code
// of their own layout.

#include <string>

namespace leveldb {
struct Options;
class Status;
Status DestroyDB(const std::string& name, const Options& options);
}  // namespace leveldb

namespace {

// Read at each call, so that no linker drops the reference that proves the layout.
const void* volatile layout_proof = reinterpret_cast<const void*>(&leveldb::DestroyDB);

}  // namespace

// 1 when the layout is the C++11 one.
extern "C" int leveldb_bloom_dropin_linked_cxx11_string() {
  (void)layout_proof;
  return _GLIBCXX_USE_CXX11_ABI;
}
