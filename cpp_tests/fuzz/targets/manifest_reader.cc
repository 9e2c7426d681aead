// Fuzz target 7: the MANIFEST reader of the leveldb-bloom command (cli/src/manifest.rs: the
// log's blocks, fragments and checksums, version edits and their fields, the live set), on
// arbitrary bytes read as a MANIFEST.
//
// Checks: no crash, hang or unbounded allocation (the Rust code is built with overflow checks
// and panic=abort; libFuzzer's -rss_limit_mb and -malloc_limit_mb bound memory), and that the
// answer does not depend on where the bytes lie in memory.
//
// Input: the MANIFEST's bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

extern "C" int64_t leveldb_bloom_cli_fuzz_manifest(const uint8_t* data, size_t len);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exactly sized heap copy, so that ASan sees any read past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) memcpy(copy.get(), data, size);
  const int64_t first = leveldb_bloom_cli_fuzz_manifest(copy.get(), size);
  const int64_t again = leveldb_bloom_cli_fuzz_manifest(data, size);
  if (first != again) {
    fprintf(stderr, "FAILURE: the same bytes read as %lld and %lld live tables\n",
            static_cast<long long>(first), static_cast<long long>(again));
    abort();
  }
  return 0;
}
