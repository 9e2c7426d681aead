// Fuzz target 6: the table reader of the leveldb-bloom command (cli/src/table.rs and
// cli/src/report/analyze.rs: footer, block handles, blocks and their checksums, snappy,
// prefix-compressed entries and restarts, the metaindex and the filter block), on arbitrary
// bytes read as a table file.
//
// Checks: no crash, hang or unbounded allocation (the Rust code is built with overflow checks
// and panic=abort; libFuzzer's -rss_limit_mb and -malloc_limit_mb bound memory). When the
// reader finds no problem at all (every checksum right, every key found by its filter), LevelDB's
// own leveldb::Table must open the same bytes and iterate exactly as many entries, checking
// checksums.
//
// Input: u8 flags | table bytes
//   flags bit 0: read keys as internal keys (a database's tables) rather than user keys
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <leveldb/env.h>

#include "support.h"

extern "C" int leveldb_bloom_cli_fuzz_table(const uint8_t* data, size_t len, int internal_keys,
                                            uint64_t* entries);

namespace {

// The input as a file, for LevelDB's Table::Open.
class MemoryFile : public leveldb::RandomAccessFile {
 public:
  explicit MemoryFile(std::string contents) : contents_(std::move(contents)) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    if (offset > contents_.size()) return leveldb::Status::IOError("past the end");
    size_t avail = contents_.size() - offset;
    if (n > avail) n = avail;
    memcpy(scratch, contents_.data() + offset, n);
    *result = leveldb::Slice(scratch, n);
    return leveldb::Status::OK();
  }

 private:
  std::string contents_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int internal = data[0] & 1;
  const uint8_t* table = data + 1;
  const size_t len = size - 1;
  // An exactly sized heap copy, so that ASan sees any read past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[len ? len : 1]);
  if (len) memcpy(copy.get(), table, len);
  uint64_t entries = 0;
  const int clean = leveldb_bloom_cli_fuzz_table(copy.get(), len, internal, &entries);
  if (clean != 1) return 0;

  MemoryFile file(std::string(reinterpret_cast<const char*>(table), len));
  std::string error;
  const int64_t counted = support::leveldb_table_entries(&file, len, &error);
  if (counted < 0) {
    fprintf(stderr, "FAILURE: our reader found no problem, LevelDB does: %s\n", error.c_str());
    abort();
  }
  if (static_cast<uint64_t>(counted) != entries) {
    fprintf(stderr, "FAILURE: our reader counts %llu entries, LevelDB %lld\n",
            static_cast<unsigned long long>(entries), static_cast<long long>(counted));
    abort();
  }
  return 0;
}
