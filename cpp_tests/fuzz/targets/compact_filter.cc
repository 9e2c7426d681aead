// Fuzz target 5: the opt-in compact filter format, from arbitrary keys and settings, and
// arbitrary (or corrupted) bytes read as compact filters.
//
// Policies come from leveldb_bloom_policy_create_compact (fractional and whole bits per key,
// and values it must refuse: NaN, infinities, negative, above 32) and
// leveldb_bloom_policy_create_for_fp_rate(rate, COMPACT); leveldb_bloom_policy_format and
// _bits_per_key must report what was asked.
//
// Checks on a filter built from the keys: its length follows the format rule (LevelDB's Bloom
// length: for whole bits per key, the length of LevelDB's own CreateFilter output); the size
// query and a one-byte-short buffer answer BUFFER_TOO_SMALL with that length and write
// nothing; leveldb_bloom_create_filter, _create_filter_slices and _cb_create_filter write the
// same bytes and nothing past them; the filter ends in the byte 31 (always from 1.5 bits per
// key) or is all zero; every key may match through the single, batch and callback
// queries of the compact policy (no false negatives); stock LevelDB's
// NewBloomFilterPolicy(10)->KeyMayMatch answers "may match" for every key and every other
// key (a database written with compact filters stays correct under stock LevelDB); other
// keys get the same answer from every query path. A filter block of compact filters: the same
// bytes as LevelDB's own FilterBlockBuilder calling the compact policy through a
// leveldb::FilterPolicy; every key matches at its block (ours and LevelDB's reader); empty
// windows match nothing.
//
// Checks on arbitrary bytes as a filter (exactly sized on the heap or at an odd address), and
// on the built filter with arbitrary bytes XORed in: no crash (the Rust library is built with
// overflow checks and panic=abort), every query path agrees, and a filter that is not compact
// (shorter than 2 bytes, or a last byte other than 31) is answered exactly as LevelDB's
// KeyMayMatch.
//
// Input:  u8 flags | u16 param (LE) | varint synthetic_keys | varint filter_len, filter bytes |
//         (varint key_len, key bytes)*
//   flags bits 0-1: the policy: 0 create_compact(param / 2048) (0 to 32, fractional);
//                   1 create_compact(param % 33); 2 create_for_fp_rate(2^-(param / 2048),
//                   COMPACT); 3 refused settings, which must give NULL: bits per key (by
//                   param % 8), a rate (by param / 8 % 8), a format (param / 64 - 512);
//                   then create_compact(10)
//   flags bit 2:    also query the built filter with the filter bytes XORed into it (from
//                   byte param % len), and the filter cut after param % len bytes, the
//                   filter bytes appended, then its marker
//   flags bits 4-5: the filter block gets 1 + this many data blocks (3000 bytes apart)
//   flags bit 6:    query the arbitrary filter at an odd address inside a larger buffer
//   synthetic keys: that many extra keys (at most 512), little-endian u32 i; at most 512
//                   explicit keys
#include <cmath>
#include <limits>

#include "common.h"

namespace {

constexpr size_t kMaxExplicitKeys = 512;
constexpr uint64_t kMaxSyntheticKeys = 512;
constexpr double kMaxBitsPerKey = 32.0;

const leveldb::FilterPolicy* stock10() { return fuzz::leveldb_policy(10); }

// The format rule for the filter length (src/compact/mod.rs, CompactPolicy::filter_len).
size_t expected_len(size_t n, double bpk) {
  const double bits = std::max(std::ceil(static_cast<double>(n) * bpk), 64.0);
  return (static_cast<size_t>(bits) + 7) / 8 + 1;
}

bool is_compact(const std::string& f) {
  return f.size() >= 2 && static_cast<uint8_t>(f.back()) == 31;
}

// A LevelDB filter policy whose filters are the compact policy's, through the C API, as the
// drop-in would make them: LevelDB's FilterBlockBuilder then builds the reference block.
class CompactThroughLevelDB : public leveldb::FilterPolicy {
 public:
  explicit CompactThroughLevelDB(const leveldb_bloom_policy* p) : p_(p) {}
  const char* Name() const override { return leveldb_bloom_policy_name(p_); }
  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override {
    static_assert(sizeof(leveldb::Slice) == sizeof(leveldb_bloom_slice), "Slice layout");
    const size_t len = leveldb_bloom_filter_len(p_, static_cast<size_t>(n));
    const size_t start = dst->size();
    dst->resize(start + len);
    size_t written = 0;
    FUZZ_EXPECT_STATUS(leveldb_bloom_create_filter_slices(
                           p_, reinterpret_cast<const leveldb_bloom_slice*>(keys),
                           static_cast<size_t>(n), reinterpret_cast<uint8_t*>(&(*dst)[start]),
                           len, &written),
                       LEVELDB_BLOOM_OK, "create_filter_slices for LevelDB's builder");
    FUZZ_CHECK(written == len, "wrote %zu of %zu bytes", written, len);
  }
  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override {
    return leveldb_bloom_key_may_match(p_, key.data(), key.size(),
                                       reinterpret_cast<const uint8_t*>(filter.data()),
                                       filter.size());
  }

 private:
  const leveldb_bloom_policy* p_;
};

// Every query path of `p` on `filter` for every key of `keys`; they must agree. Returns the
// answers.
std::vector<uint8_t> answers(const leveldb_bloom_policy* p, const fuzz::KeySet& keys,
                             const uint8_t* filter, size_t filter_len) {
  const size_t n = keys.size();
  std::vector<uint8_t> batch(n + 1, 0x55);
  FUZZ_EXPECT_STATUS(leveldb_bloom_key_may_match_batch(p, keys.ptrs.data(), keys.lens.data(), n,
                                                       filter, filter_len, batch.data()),
                     LEVELDB_BLOOM_OK, "batch query, %zu keys, filter %s", n,
                     fuzz::hex(filter, filter_len).c_str());
  FUZZ_CHECK(batch[n] == 0x55, "batch query wrote past results[%zu]", n);
  batch.pop_back();
  for (size_t i = 0; i < n; i++) {
    const std::string& key = keys.keys[i];
    const bool single = leveldb_bloom_key_may_match(p, keys.ptrs[i], key.size(), filter,
                                                    filter_len);
    const uint8_t cb = leveldb_bloom_cb_key_may_match(
        const_cast<leveldb_bloom_policy*>(p), keys.ptrs[i], key.size(),
        reinterpret_cast<const char*>(filter), filter_len);
    if (batch[i] > 1 || single != (batch[i] == 1) || cb != batch[i]) {
      fuzz::fail("query paths disagree\n  filter (%zu bytes) = %s\n  key = %s\n"
                 "  single = %d, callback = %d, batch = %d",
                 filter_len, fuzz::hex(filter, filter_len).c_str(), fuzz::hex(key).c_str(),
                 single, cb, batch[i]);
    }
  }
  return batch;
}

// Arbitrary bytes as a filter: answered alike by every path; a filter that is not compact
// exactly as LevelDB answers.
void check_arbitrary_filter(const leveldb_bloom_policy* p, const fuzz::KeySet& keys,
                            const uint8_t* filter, size_t filter_len, const char* what) {
  const std::vector<uint8_t> got = answers(p, keys, filter, filter_len);
  const std::string bytes(reinterpret_cast<const char*>(filter), filter_len);
  if (is_compact(bytes)) return;
  const leveldb::Slice slice(bytes);
  for (size_t i = 0; i < keys.size(); i++) {
    const bool want = stock10()->KeyMayMatch(leveldb::Slice(keys.keys[i]), slice);
    if (got[i] != uint8_t{want}) {
      fuzz::fail("%s: not a compact filter, yet not answered as LevelDB\n"
                 "  filter (%zu bytes) = %s\n  key = %s\n  LevelDB = %d, compact policy = %d",
                 what, filter_len, fuzz::hex(bytes).c_str(), fuzz::hex(keys.keys[i]).c_str(),
                 want, got[i]);
    }
  }
}

struct Made {
  leveldb_bloom_policy* p = nullptr;
  double bpk = 10;
};

// The policy the flags ask for, with the checks of its creation.
Made make_policy(uint8_t how, uint16_t param) {
  Made m;
  switch (how) {
    case 0:
    case 1: {
      m.bpk = how == 0 ? param / 2048.0 : static_cast<double>(param % 33);
      m.p = leveldb_bloom_policy_create_compact(m.bpk);
      FUZZ_CHECK(m.p != nullptr, "create_compact(%.17g) returned NULL", m.bpk);
      break;
    }
    case 2: {
      const double rate = std::exp2(-(param / 2048.0));
      m.p = leveldb_bloom_policy_create_for_fp_rate(rate, LEVELDB_BLOOM_FORMAT_COMPACT);
      // The documented reach: (0, 1), down to about 8e-10 (32 bits per key for filters of
      // about 60 keys, the size that needs the most); refused below 6e-10, accepted from
      // 1.1e-9 (a margin each side).
      if (!(rate < 1.0) || rate < 6e-10) {
        FUZZ_CHECK(m.p == nullptr, "create_for_fp_rate(%.17g, COMPACT) accepted", rate);
      } else if (rate >= 1.1e-9) {
        FUZZ_CHECK(m.p != nullptr, "create_for_fp_rate(%.17g, COMPACT) returned NULL", rate);
      }
      if (m.p == nullptr) {
        m.bpk = 10;
        m.p = leveldb_bloom_policy_create_compact(m.bpk);
        break;
      }
      // The documented choice: bits per key in 64ths, above the information bound
      // log2(1 / rate) that no filter beats, within a quarter of it plus the spare slots' and
      // the trailer's share.
      m.bpk = leveldb_bloom_policy_bits_per_key(m.p);
      const double bound = std::log2(1.0 / rate);
      FUZZ_CHECK(m.bpk * 64 == std::floor(m.bpk * 64) && m.bpk > bound &&
                     m.bpk <= 1.25 * bound + 1.5 && m.bpk <= kMaxBitsPerKey,
                 "create_for_fp_rate(%.17g): %.17g bits per key (bound %.17g)", rate, m.bpk,
                 bound);
      break;
    }
    default: {
      const double invalid[] = {std::numeric_limits<double>::quiet_NaN(),
                                -std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                -1.0,
                                -std::numeric_limits<double>::denorm_min(),
                                std::nextafter(kMaxBitsPerKey, 1e300),
                                std::numeric_limits<double>::max()};
      const double bad = invalid[param % 8];
      leveldb_bloom_policy* refused = leveldb_bloom_policy_create_compact(bad);
      FUZZ_CHECK(refused == nullptr, "create_compact(%.17g) accepted", bad);
      FUZZ_CHECK(leveldb_bloom_policy_format(refused) == -1, "format(NULL) != -1");
      FUZZ_CHECK(leveldb_bloom_policy_bits_per_key(refused) == -1.0, "bits_per_key(NULL) != -1");
      // A rate of 0, 1, negative, NaN or beyond reach is refused too; so is an unknown format.
      const double bad_rates[] = {0.0, 1.0, -0.5, std::numeric_limits<double>::quiet_NaN(),
                                  1e-300, 2.0, std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity()};
      const double bad_rate = bad_rates[(param >> 3) % 8];
      FUZZ_CHECK(leveldb_bloom_policy_create_for_fp_rate(bad_rate, LEVELDB_BLOOM_FORMAT_COMPACT) ==
                     nullptr,
                 "create_for_fp_rate(%.17g, COMPACT) accepted", bad_rate);
      const int bad_format = static_cast<int>(param >> 6) - 512;  // -512..511
      if (bad_format != LEVELDB_BLOOM_FORMAT_BLOOM && bad_format != LEVELDB_BLOOM_FORMAT_COMPACT) {
        FUZZ_CHECK(leveldb_bloom_policy_create_for_fp_rate(0.01, bad_format) == nullptr,
                   "create_for_fp_rate(0.01, format %d) accepted", bad_format);
      }
      m.bpk = 10;
      m.p = leveldb_bloom_policy_create_compact(m.bpk);
      break;
    }
  }
  FUZZ_CHECK(m.p != nullptr, "no policy");
  FUZZ_CHECK(leveldb_bloom_policy_format(m.p) == LEVELDB_BLOOM_FORMAT_COMPACT,
             "format %d, not COMPACT", leveldb_bloom_policy_format(m.p));
  FUZZ_CHECK(leveldb_bloom_policy_bits_per_key(m.p) == m.bpk, "bits per key %.17g, asked %.17g",
             leveldb_bloom_policy_bits_per_key(m.p), m.bpk);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t flags = in.u8();
  const uint16_t param = static_cast<uint16_t>(in.u8() | in.u8() << 8);
  uint64_t synthetic = in.varint();
  if (synthetic > kMaxSyntheticKeys) synthetic = kMaxSyntheticKeys;
  const std::string arbitrary = in.lp_bytes();
  fuzz::KeySet keys;
  keys.read(in, kMaxExplicitKeys, static_cast<uint32_t>(synthetic));
  const size_t n = keys.size();

  const Made made = make_policy(flags & 3, param);
  leveldb_bloom_policy* const p = made.p;
  const double bpk = made.bpk;

  // Other keys: not added (unless by chance), for stock LevelDB and path agreement.
  fuzz::KeySet others;
  for (int i = 0; i < 16; i++) others.add("other-" + std::to_string(i) + "-" + std::to_string(n));
  others.add(arbitrary);
  others.add("");
  others.seal();

  // ---- Sizes: the format rule, LevelDB's Bloom length.
  const size_t len = expected_len(n, bpk);
  FUZZ_CHECK(leveldb_bloom_filter_len(p, n) == len, "filter_len(%zu) = %zu at %.17g bits, not %zu",
             n, leveldb_bloom_filter_len(p, n), bpk, len);
  if (bpk == std::floor(bpk)) {
    std::string stock;
    const leveldb::FilterPolicy* bloom = fuzz::leveldb_policy(static_cast<int>(bpk));
    bloom->CreateFilter(keys.slices.data(), static_cast<int>(n), &stock);
    FUZZ_CHECK(stock.size() == len, "LevelDB's Bloom filter has %zu bytes, compact %zu (bpk %g)",
               stock.size(), len, bpk);
  }

  // ---- Creation, each way in.
  size_t got_len = 12345;
  FUZZ_EXPECT_STATUS(leveldb_bloom_create_filter(p, keys.ptrs.data(), keys.lens.data(), n,
                                                 nullptr, 0, &got_len),
                     LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL, "size query");
  FUZZ_CHECK(got_len == len, "size query said %zu, not %zu", got_len, len);
  std::vector<uint8_t> out(len + 8, 0xa5);
  got_len = 0;
  FUZZ_EXPECT_STATUS(leveldb_bloom_create_filter(p, keys.ptrs.data(), keys.lens.data(), n,
                                                 out.data(), len - 1, &got_len),
                     LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL, "one byte short");
  FUZZ_CHECK(got_len == len, "one byte short: needed %zu, not %zu", got_len, len);
  for (uint8_t b : out) FUZZ_CHECK(b == 0xa5, "a refused create wrote into the buffer");
  FUZZ_EXPECT_STATUS(leveldb_bloom_create_filter(p, keys.ptrs.data(), keys.lens.data(), n,
                                                 out.data(), out.size(), &got_len),
                     LEVELDB_BLOOM_OK, "create_filter, %zu keys, %.17g bits per key", n, bpk);
  FUZZ_CHECK(got_len == len, "create_filter wrote %zu bytes, not %zu", got_len, len);
  for (size_t i = len; i < out.size(); i++) FUZZ_CHECK(out[i] == 0xa5, "wrote past the filter");
  const std::string filter(reinterpret_cast<const char*>(out.data()), len);

  std::vector<uint8_t> out2(len, 0x5a);
  FUZZ_EXPECT_STATUS(leveldb_bloom_create_filter_slices(p, keys.rust_slices.data(), n,
                                                        out2.data(), out2.size(), &got_len),
                     LEVELDB_BLOOM_OK, "create_filter_slices");
  FUZZ_CHECK(got_len == len && std::memcmp(out2.data(), filter.data(), len) == 0,
             "create_filter_slices differs\n  create_filter = %s\n  slices        = %s",
             fuzz::hex(filter).c_str(), fuzz::hex(out2.data(), got_len).c_str());
  size_t cb_len = 0;
  char* cb = leveldb_bloom_cb_create_filter(p, keys.ptrs.data(), keys.lens.data(),
                                            static_cast<int>(n), &cb_len);
  FUZZ_CHECK(cb != nullptr, "cb_create_filter returned NULL");
  FUZZ_CHECK(std::string(cb, cb_len) == filter,
             "cb_create_filter differs\n  create_filter = %s\n  callback      = %s",
             fuzz::hex(filter).c_str(), fuzz::hex(cb, cb_len).c_str());
  std::free(cb);

  // ---- The marker.
  const uint8_t last = static_cast<uint8_t>(filter.back());
  if (last != 31) {
    for (char c : filter) {
      FUZZ_CHECK(c == 0, "last byte %d but not all zero: %s", last, fuzz::hex(filter).c_str());
    }
    FUZZ_CHECK(bpk < 1.5 && n > 0, "no filter fits at %.17g bits per key, %zu keys", bpk, n);
  }

  // ---- No false negatives; stock LevelDB answers "may match" for every key.
  const fuzz::ExactBuffer exact(filter);
  const std::vector<uint8_t> members = answers(p, keys, exact.data(), exact.size());
  for (size_t i = 0; i < n; i++) {
    if (members[i] != 1) {
      fuzz::fail("false negative: key %zu = %s not found in its compact filter\n"
                 "  bits per key = %.17g, %zu keys\n  filter = %s",
                 i, fuzz::hex(keys.keys[i]).c_str(), bpk, n, fuzz::hex(filter, 1024).c_str());
    }
    FUZZ_CHECK(stock10()->KeyMayMatch(keys.slices[i], exact.slice()),
               "stock LevelDB says key %s is not in the compact filter %s",
               fuzz::hex(keys.keys[i]).c_str(), fuzz::hex(filter).c_str());
  }
  answers(p, others, exact.data(), exact.size());
  fuzz::RustPolicy bloom(10);
  for (size_t i = 0; i < others.size(); i++) {
    FUZZ_CHECK(stock10()->KeyMayMatch(others.slices[i], exact.slice()),
               "stock LevelDB answered no match on a compact filter %s", fuzz::hex(filter).c_str());
    FUZZ_CHECK(leveldb_bloom_key_may_match(bloom.p, others.ptrs[i], others.lens[i], exact.data(),
                                           exact.size()),
               "a Bloom policy answered no match on a compact filter");
  }

  // ---- A filter block of compact filters.
  {
    const size_t blocks = 1 + ((flags >> 4) & 3);
    CompactThroughLevelDB through(p);
    leveldb::FilterBlockBuilder lb(&through);
    leveldb_bloom_filter_block_builder* rb = leveldb_bloom_filter_block_builder_create(p);
    FUZZ_CHECK(rb != nullptr, "builder_create returned NULL");
    std::vector<uint64_t> offsets(n);
    for (size_t b = 0; b < blocks; b++) {
      const uint64_t offset = 3000 * b;
      lb.StartBlock(offset);
      FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_start_block(rb, offset),
                         LEVELDB_BLOOM_OK, "start_block(%llu)",
                         static_cast<unsigned long long>(offset));
      for (size_t i = b * n / blocks; i < (b + 1) * n / blocks; i++) {
        lb.AddKey(keys.slices[i]);
        FUZZ_EXPECT_STATUS(
            leveldb_bloom_filter_block_builder_add_key(rb, keys.ptrs[i], keys.lens[i]),
            LEVELDB_BLOOM_OK, "add_key");
        offsets[i] = offset;
      }
    }
    const uint8_t* block_data = nullptr;
    size_t block_len = 0;
    FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_finish(rb, &block_data, &block_len),
                       LEVELDB_BLOOM_OK, "finish");
    const std::string block(reinterpret_cast<const char*>(block_data), block_len);
    leveldb_bloom_filter_block_builder_destroy(rb);
    const std::string stock_block = lb.Finish().ToString();
    FUZZ_CHECK(block == stock_block,
               "filter block differs from LevelDB's builder with the compact policy\n"
               "  LevelDB       = %s\n  leveldb-bloom = %s",
               fuzz::hex(stock_block, 1024).c_str(), fuzz::hex(block, 1024).c_str());
    const fuzz::ExactBuffer eb(block);
    leveldb::FilterBlockReader stock_reader(stock10(), eb.slice());
    leveldb::FilterBlockReader through_reader(&through, eb.slice());
    std::vector<uint8_t> batch(n + 1, 0x55);
    FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_may_match_batch(
                           p, eb.data(), eb.size(), offsets.data(), keys.ptrs.data(),
                           keys.lens.data(), n, batch.data()),
                       LEVELDB_BLOOM_OK, "filter block batch");
    FUZZ_CHECK(batch[n] == 0x55, "filter block batch wrote past its results");
    for (size_t i = 0; i < n; i++) {
      const bool single = leveldb_bloom_filter_block_may_match(
          p, eb.data(), eb.size(), offsets[i], keys.ptrs[i], keys.lens[i]);
      const bool stock = stock_reader.KeyMayMatch(offsets[i], keys.slices[i]);
      const bool thru = through_reader.KeyMayMatch(offsets[i], keys.slices[i]);
      if (!single || batch[i] != 1 || !stock || !thru) {
        fuzz::fail("filter block false negative: key %s at offset %llu (single %d, batch %d, "
                   "stock LevelDB reader %d, LevelDB reader with the compact policy %d)",
                   fuzz::hex(keys.keys[i]).c_str(), static_cast<unsigned long long>(offsets[i]),
                   single, batch[i], stock, thru);
      }
    }
    // Windows 1 and 3 (offsets 2048.., 6144..) are empty when there are 2 or 3+ blocks.
    for (size_t i = 0; i < others.size(); i++) {
      for (uint64_t off : {uint64_t{0}, uint64_t{2048}, uint64_t{6144}, uint64_t{1} << 40}) {
        const bool ours = leveldb_bloom_filter_block_may_match(p, eb.data(), eb.size(), off,
                                                               others.ptrs[i], others.lens[i]);
        const bool thru = through_reader.KeyMayMatch(off, others.slices[i]);
        FUZZ_CHECK(ours == thru, "filter block: ours %d, LevelDB's reader with the compact "
                   "policy %d at offset %llu", ours, thru, static_cast<unsigned long long>(off));
        if (!stock_reader.KeyMayMatch(off, others.slices[i])) {
          FUZZ_CHECK(!ours, "stock LevelDB's reader finds window %llu empty, we match",
                     static_cast<unsigned long long>(off >> 11));
        }
      }
    }
  }

  // ---- Arbitrary bytes as a filter.
  std::unique_ptr<uint8_t[]> holder;
  const fuzz::ExactBuffer arb(arbitrary);
  const uint8_t* arb_data = arb.data();
  if (flags & 0x40) {
    holder.reset(new uint8_t[arbitrary.size() + 3]);
    std::memset(holder.get(), 0xff, arbitrary.size() + 3);
    std::memcpy(holder.get() + 1, arbitrary.data(), arbitrary.size());
    arb_data = holder.get() + 1;
  }
  check_arbitrary_filter(p, keys, arb_data, arbitrary.size(), "arbitrary filter");
  check_arbitrary_filter(p, others, arb_data, arbitrary.size(), "arbitrary filter");

  // ---- The built filter, corrupted: arbitrary bytes XORed in, or replacing its tail.
  if ((flags & 0x04) && !arbitrary.empty()) {
    std::string corrupt = filter;
    for (size_t i = 0; i < arbitrary.size(); i++) {
      corrupt[(param + i) % corrupt.size()] ^= arbitrary[i];
    }
    const fuzz::ExactBuffer c1(corrupt);
    check_arbitrary_filter(p, keys, c1.data(), c1.size(), "XOR-corrupted compact filter");
    check_arbitrary_filter(p, others, c1.data(), c1.size(), "XOR-corrupted compact filter");
    // The payload cut or extended under the same marker, then the arbitrary tail.
    std::string spliced = filter.substr(0, param % filter.size()) + arbitrary;
    spliced.push_back(filter.back());
    const fuzz::ExactBuffer c2(spliced);
    check_arbitrary_filter(p, keys, c2.data(), c2.size(), "spliced compact filter");
  }

  leveldb_bloom_policy_destroy(p);
  return 0;
}
