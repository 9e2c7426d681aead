// The drop-in on Windows (MinGW-w64), where it can only be linked into the program with
// LevelDB: there is no preload, and no dynamic symbol table to read a LevelDB's string layout
// from. So the layout is proven when the program links, not when it runs.
//
// This file and string_ops.cc are compiled with the same compiler and flags, so both use its
// default std::string layout (MinGW's GCC: the C++11 one). The decision below, the only one
// a Windows drop-in makes, refers to LevelDB's `leveldb::DestroyDB(const std::string&, const
// Options&)` (db_impl.cc, in LevelDB 1.20 to 1.23 alike, and in every program that
// opens a database) in that layout: a LevelDB built with the other layout defines the other
// name, the reference stays unresolved, and the program does not link. A program that links
// runs with its LevelDB's strings written by code of their own layout.

#include <string>

#include "string_ops.h"

namespace leveldb {
struct Options;
class Status;
Status DestroyDB(const std::string& name, const Options& options);
}  // namespace leveldb

extern "C" const leveldb_bloom_dropin_string_ops leveldb_bloom_dropin_string_ops_linked;

namespace {

// `caller` NULL: every call comes here (the policy caches a decision per caller), and every
// caller is the one LevelDB the program links.
const leveldb_bloom_dropin_decision kLinked = {nullptr, &leveldb_bloom_dropin_string_ops_linked,
                                               nullptr, nullptr};

// Read at each decision, so that no linker drops the reference that proves the layout.
const void* volatile layout_proof = reinterpret_cast<const void*>(&leveldb::DestroyDB);

}  // namespace

extern "C" const leveldb_bloom_dropin_decision* leveldb_bloom_dropin_linked_decision(
    const void* /*caller*/) {
  (void)layout_proof;
  return &kLinked;
}

// 1 when the layout is the C++11 one (for the statistics).
extern "C" const int leveldb_bloom_dropin_linked_cxx11_string = _GLIBCXX_USE_CXX11_ABI;
