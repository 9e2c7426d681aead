// Fuzz target 1: querying a filter made of arbitrary bytes with arbitrary keys, through
// leveldb_bloom_key_may_match, leveldb_bloom_cb_key_may_match and
// leveldb_bloom_key_may_match_batch, each compared with LevelDB's own
// FilterPolicy::KeyMayMatch on the same bytes (defined for any bytes).
//
// Input:  u8 flags | varint filter_len, filter bytes | (varint key_len, key bytes)*
//   flags bits 0-5: bits per key of the querying policy (answers must not depend on it)
//   flags bit 6:    also check the documented answers for a NULL filter / NULL key
//   flags bit 7:    query the filter at an odd address inside a larger buffer
#include "common.h"

constexpr size_t kMaxKeys = 1024;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t flags = in.u8();
  const int bpk = flags & 0x3f;
  const std::string filter_bytes = in.lp_bytes();
  fuzz::KeySet keys;
  while (!in.empty() && keys.size() < kMaxKeys) keys.add(in.lp_bytes());
  keys.seal();

  // The filter: exactly sized on the heap, or at an odd offset inside a larger buffer.
  std::unique_ptr<uint8_t[]> holder;
  const uint8_t* filter;
  fuzz::ExactBuffer exact(filter_bytes);
  if (flags & 0x80) {
    holder.reset(new uint8_t[filter_bytes.size() + 3]);
    std::memset(holder.get(), 0xff, filter_bytes.size() + 3);
    std::memcpy(holder.get() + 1, filter_bytes.data(), filter_bytes.size());
    filter = holder.get() + 1;
  } else {
    filter = exact.data();
  }
  const size_t filter_len = filter_bytes.size();
  const leveldb::Slice filter_slice(reinterpret_cast<const char*>(filter), filter_len);

  fuzz::RustPolicy rust(bpk);
  FUZZ_CHECK(rust.p != nullptr, "leveldb_bloom_policy_create(%d) returned NULL", bpk);
  const leveldb::FilterPolicy* stock = fuzz::leveldb_policy(bpk);

  std::vector<uint8_t> batch(keys.size() + 1, 0x55);
  const int st = leveldb_bloom_key_may_match_batch(rust.p, keys.ptrs.data(), keys.lens.data(),
                                                   keys.size(), filter, filter_len, batch.data());
  FUZZ_EXPECT_STATUS(st, LEVELDB_BLOOM_OK, "batch query, %zu keys, filter %s", keys.size(),
                     fuzz::hex(filter, filter_len).c_str());
  FUZZ_CHECK(batch[keys.size()] == 0x55, "batch query wrote past results[%zu]", keys.size());

  for (size_t i = 0; i < keys.size(); i++) {
    const std::string& key = keys.keys[i];
    const bool want = stock->KeyMayMatch(leveldb::Slice(key), filter_slice);
    const bool single =
        leveldb_bloom_key_may_match(rust.p, keys.ptrs[i], key.size(), filter, filter_len);
    const uint8_t cb = leveldb_bloom_cb_key_may_match(rust.p, keys.ptrs[i], key.size(),
                                                      reinterpret_cast<const char*>(filter),
                                                      filter_len);
    if (single != want || cb != uint8_t{want} || batch[i] != uint8_t{want}) {
      fuzz::fail(
          "query mismatch\n  filter (%zu bytes) = %s\n  key = %s\n  LevelDB KeyMayMatch = %d\n"
          "  leveldb_bloom_key_may_match = %d\n  leveldb_bloom_cb_key_may_match = %d\n"
          "  leveldb_bloom_key_may_match_batch[%zu] = %d",
          filter_len, fuzz::hex(filter, filter_len).c_str(), fuzz::hex(key).c_str(), want,
          single, cb, i, batch[i]);
    }
  }

  if (flags & 0x40) {
    // Documented: what cannot be answered answers "may match"; batch errors set every
    // result to 1.
    const char* k = keys.size() > 0 ? keys.keys[0].data() : "";
    FUZZ_CHECK(leveldb_bloom_key_may_match(rust.p, k, 0, nullptr, filter_len),
               "NULL filter answered no match");
    FUZZ_CHECK(leveldb_bloom_key_may_match(rust.p, nullptr, 1 + filter_len, filter, filter_len),
               "NULL key with a length answered no match");
    FUZZ_CHECK(leveldb_bloom_key_may_match(nullptr, k, 0, filter, filter_len),
               "NULL policy answered no match");
    FUZZ_CHECK(leveldb_bloom_cb_key_may_match(rust.p, nullptr, 3, reinterpret_cast<const char*>(filter),
                                              filter_len) == 1,
               "callback: NULL key with a length did not answer 1");
    if (keys.size() > 0) {
      std::vector<uint8_t> r(keys.size(), 0x55);
      FUZZ_EXPECT_STATUS(
          leveldb_bloom_key_may_match_batch(rust.p, keys.ptrs.data(), keys.lens.data(),
                                            keys.size(), nullptr, filter_len, r.data()),
          LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "batch with NULL filter");
      for (uint8_t v : r) FUZZ_CHECK(v == 1, "batch error left a result at %d, not 1", v);
      std::vector<size_t> bad_lens(keys.lens);
      bad_lens[0] = 1;
      std::vector<const char*> bad_ptrs(keys.ptrs);
      bad_ptrs[0] = nullptr;
      std::fill(r.begin(), r.end(), 0x55);
      FUZZ_EXPECT_STATUS(
          leveldb_bloom_key_may_match_batch(rust.p, bad_ptrs.data(), bad_lens.data(),
                                            keys.size(), filter, filter_len, r.data()),
          LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "batch with a NULL key of length 1");
      for (uint8_t v : r) FUZZ_CHECK(v == 1, "batch error left a result at %d, not 1", v);
      // A length no object can have, and a misaligned length array: INVALID_ARGUMENT.
      bad_lens = keys.lens;
      bad_lens[0] = SIZE_MAX;
      std::fill(r.begin(), r.end(), 0x55);
      FUZZ_EXPECT_STATUS(
          leveldb_bloom_key_may_match_batch(rust.p, keys.ptrs.data(), bad_lens.data(),
                                            keys.size(), filter, filter_len, r.data()),
          LEVELDB_BLOOM_ERR_INVALID_ARGUMENT, "batch with a key of length SIZE_MAX");
      for (uint8_t v : r) FUZZ_CHECK(v == 1, "batch error left a result at %d, not 1", v);
      std::vector<unsigned char> raw(sizeof(size_t) * keys.size() + 1);
      std::memcpy(raw.data() + 1, keys.lens.data(), sizeof(size_t) * keys.size());
      std::fill(r.begin(), r.end(), 0x55);
      FUZZ_EXPECT_STATUS(
          leveldb_bloom_key_may_match_batch(rust.p, keys.ptrs.data(),
                                            reinterpret_cast<const size_t*>(raw.data() + 1),
                                            keys.size(), filter, filter_len, r.data()),
          LEVELDB_BLOOM_ERR_INVALID_ARGUMENT, "batch with a misaligned key_lens");
      for (uint8_t v : r) FUZZ_CHECK(v == 1, "batch error left a result at %d, not 1", v);
    }
  }
  return 0;
}
