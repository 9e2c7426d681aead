// Fuzz target 7: the MANIFEST and write-ahead log readers of the leveldb-bloom command
// (cli/src/manifest.rs and wal.rs: the log's blocks, fragments and checksums, version edits
// and their fields, the live set; write batches and their records), on arbitrary bytes read
// both as a MANIFEST and as a log.
//
// Checks: no crash, hang or unbounded allocation (the Rust code is built with debug
// assertions, overflow checks and panic=abort; libFuzzer's -rss_limit_mb and
// -malloc_limit_mb bound memory), and the same answers for the same bytes read from another
// place in memory. LevelDB reads MANIFESTs and logs only inside DB::Open, through classes it
// does not install, so no LevelDB oracle judges these answers; the command's tests
// (cli/tests) compare them with LevelDB on databases it wrote and damaged.
//
// Input: the file's bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

extern "C" int64_t leveldb_bloom_cli_fuzz_manifest(const uint8_t* data, size_t len,
                                                   uint64_t* log_records, int* log_damaged);

namespace {

struct Answer {
  int64_t tables;
  uint64_t log_records;
  int log_damaged;
};

// The readers' answers on an exactly sized heap copy at `offset` bytes into its allocation,
// so that ASan sees any read past the end and alignment never matters.
Answer Read(const uint8_t* data, size_t size, size_t offset) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size + offset + 1]);
  if (size) memcpy(copy.get() + offset, data, size);
  Answer a{};
  a.tables = leveldb_bloom_cli_fuzz_manifest(copy.get() + offset, size, &a.log_records,
                                             &a.log_damaged);
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Answer first = Read(data, size, 0);
  const Answer again = Read(data, size, 3);
  if (first.tables != again.tables || first.log_records != again.log_records ||
      first.log_damaged != again.log_damaged) {
    fprintf(stderr,
            "FAILURE: the same bytes read two ways: tables %lld/%lld, log records %llu/%llu, "
            "log damaged %d/%d\n",
            static_cast<long long>(first.tables), static_cast<long long>(again.tables),
            static_cast<unsigned long long>(first.log_records),
            static_cast<unsigned long long>(again.log_records), first.log_damaged,
            again.log_damaged);
    abort();
  }
  if (first.tables < -2 || (first.log_damaged != 0 && first.log_damaged != 1)) {
    fprintf(stderr, "FAILURE: an undocumented answer: tables %lld, log damaged %d\n",
            static_cast<long long>(first.tables), first.log_damaged);
    abort();
  }
  return 0;
}
