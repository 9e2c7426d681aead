// Fuzz target 2: querying a filter block made of arbitrary bytes at arbitrary data-block
// offsets with arbitrary keys, through leveldb_bloom_filter_block_may_match and
// leveldb_bloom_filter_block_may_match_batch, compared with LevelDB's own
// leveldb::FilterBlockReader::KeyMayMatch on the same bytes (defined for any bytes: "errors
// are potential matches").
//
// Input:  u8 flags | varint block_len, block bytes | (varint offset, varint key_len, key)*
//   flags bits 0-5: bits per key of the querying policy (answers must not depend on it)
//   flags bit 6:    also check the documented answers for a NULL block / NULL key
//   flags bit 7:    offsets are taken relative to the previous one (small steps)
#include "common.h"

constexpr size_t kMaxQueries = 1024;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t flags = in.u8();
  const int bpk = flags & 0x3f;
  const fuzz::ExactBuffer block(in.lp_bytes());
  std::vector<uint64_t> offsets;
  fuzz::KeySet keys;
  uint64_t prev = 0;
  while (!in.empty() && keys.size() < kMaxQueries) {
    uint64_t off = in.varint();
    if (flags & 0x80) off += prev;  // wraps: any u64 stays reachable
    prev = off;
    offsets.push_back(off);
    keys.add(in.lp_bytes());
  }
  keys.seal();

  fuzz::RustPolicy rust(bpk);
  FUZZ_CHECK(rust.p != nullptr, "leveldb_bloom_policy_create(%d) returned NULL", bpk);
  leveldb::FilterBlockReader reader(fuzz::leveldb_policy(bpk), block.slice());

  std::vector<uint8_t> batch(keys.size() + 1, 0x55);
  const int st = leveldb_bloom_filter_block_may_match_batch(
      rust.p, block.data(), block.size(), offsets.data(), keys.ptrs.data(), keys.lens.data(),
      keys.size(), batch.data());
  FUZZ_EXPECT_STATUS(st, LEVELDB_BLOOM_OK, "filter block batch query, %zu queries, block %s",
                     keys.size(), fuzz::hex(block.data(), block.size()).c_str());
  FUZZ_CHECK(batch[keys.size()] == 0x55, "batch query wrote past results[%zu]", keys.size());

  for (size_t i = 0; i < keys.size(); i++) {
    const std::string& key = keys.keys[i];
    const bool want = reader.KeyMayMatch(offsets[i], leveldb::Slice(key));
    const bool single = leveldb_bloom_filter_block_may_match(
        rust.p, block.data(), block.size(), offsets[i], keys.ptrs[i], key.size());
    if (single != want || batch[i] != uint8_t{want}) {
      fuzz::fail(
          "filter block query mismatch\n  block (%zu bytes) = %s\n  block_offset = %llu\n"
          "  key = %s\n  LevelDB FilterBlockReader::KeyMayMatch = %d\n"
          "  leveldb_bloom_filter_block_may_match = %d\n"
          "  leveldb_bloom_filter_block_may_match_batch[%zu] = %d",
          block.size(), fuzz::hex(block.data(), block.size(), 4096).c_str(),
          static_cast<unsigned long long>(offsets[i]), fuzz::hex(key).c_str(), want, single, i,
          batch[i]);
    }
  }

  if (flags & 0x40) {
    const uint64_t off = offsets.empty() ? 0 : offsets[0];
    FUZZ_CHECK(leveldb_bloom_filter_block_may_match(rust.p, nullptr, block.size(), off, "k", 1),
               "NULL block answered no match");
    FUZZ_CHECK(leveldb_bloom_filter_block_may_match(rust.p, block.data(), block.size(), off,
                                                    nullptr, 1),
               "NULL key with a length answered no match");
    FUZZ_CHECK(leveldb_bloom_filter_block_may_match(nullptr, block.data(), block.size(), off,
                                                    "k", 1),
               "NULL policy answered no match");
    if (keys.size() > 0) {
      std::vector<uint8_t> r(keys.size(), 0x55);
      FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_may_match_batch(
                             rust.p, block.data(), block.size(), nullptr, keys.ptrs.data(),
                             keys.lens.data(), keys.size(), r.data()),
                         LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "batch with NULL offsets");
      for (uint8_t v : r) FUZZ_CHECK(v == 1, "batch error left a result at %d, not 1", v);
    }
  }
  return 0;
}
