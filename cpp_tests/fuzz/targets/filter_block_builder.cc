// Fuzz target 4: the filter block builder driven by an arbitrary sequence of start_block /
// add_key / finish calls (and misuse: NULL arguments, calls after finish, offsets going back
// a window, offsets whose block would pass 4 GiB).
//
// Checks: every call returns the status a model of the documented behaviour predicts (never
// ERR_PANIC); a refused call changes nothing; finish returns the same bytes every time; the
// block equals what LevelDB's own leveldb::FilterBlockBuilder builds from the calls that
// were accepted (LevelDB is given only what it defines: no window going back); after finish
// every added key matches at the offset of its data block (no false negatives) through the
// single and batch queries and LevelDB's FilterBlockReader, and other queries answer as
// LevelDB's reader answers; a counted policy's statistics count the filters that hold keys,
// an uncounted one has none.
//
// Input:  u8 setup | ops...
//   setup bits 0-5: bits per key; bit 6: the policy counts (leveldb_bloom_policy_counted);
//   bit 7: destroy the policy right after creating the builder (the builder must not need it)
//   op byte, by op % 8:
//     0, 1  start_block(current offset + varint)
//     2     start_block(varint)                       any offset, backwards and huge too
//     3     start_block(window (current window + op / 8) start + varint)
//     4, 5  add_key(varint key_len, key bytes)
//     6     add u8 count synthetic keys (4-byte little-endian counters)
//     7     by (op / 8) % 4: finish; misuse with NULL arguments; add the key (NULL, 0);
//           start_block at the first offset of the open window
#include "common.h"

namespace {

constexpr size_t kMaxOps = 4096;
constexpr size_t kMaxKeys = 8192;
// Filters LevelDB and the builder are asked to generate at most (4 bytes each in the block).
constexpr uint64_t kMaxFilters = uint64_t{1} << 13;
// From this many filters on, the block passes 4 GiB (4 bytes per filter offset): documented
// ERR_TOO_LARGE. Between kMaxFilters and this, offsets are legal but cost up to 4 GiB: the
// harness does not ask for them.
constexpr uint64_t kTooLargeFilters = uint64_t{1} << 30;

struct Member {
  uint64_t offset;
  std::string key;
};

// What the documentation says the builder's state is.
struct Model {
  uint64_t filters = 0;  // filters generated so far
  uint64_t offset = 0;   // offset of the data block keys go to
  uint64_t pending = 0;  // keys waiting for the open filter
  bool finished = false;
  uint64_t filters_with_keys = 0;  // for the statistics
  uint64_t keys_in_filters = 0;
  std::vector<Member> members;
};

class Harness {
 public:
  Harness(int bpk, bool counted, bool destroy_policy_early)
      : bpk_(bpk), counted_(counted), stock_(fuzz::leveldb_policy(bpk)), lb_(stock_) {
    policy_ = leveldb_bloom_policy_create(bpk);
    if (counted) policy_ = support::counted(policy_);
    FUZZ_CHECK(policy_ != nullptr, "leveldb_bloom_policy_create(%d) returned NULL", bpk);
    rb_ = leveldb_bloom_filter_block_builder_create(policy_);
    FUZZ_CHECK(rb_ != nullptr, "leveldb_bloom_filter_block_builder_create returned NULL");
    FUZZ_CHECK(leveldb_bloom_filter_block_builder_create(nullptr) == nullptr,
               "builder_create(NULL) did not return NULL");
    if (destroy_policy_early) {
      leveldb_bloom_policy_destroy(policy_);
      policy_ = nullptr;
    }
  }
  ~Harness() {
    leveldb_bloom_filter_block_builder_destroy(rb_);
    leveldb_bloom_policy_destroy(policy_);
  }

  // The calls so far, rendered only when a check fails (see trace()).
  enum class Call { kStart, kKey, kMisuse, kFinish };
  void log(Call call, uint64_t offset = 0, const std::string* key = nullptr) {
    if (calls_.size() < 300) calls_.push_back(Logged{call, offset, key ? key->substr(0, 16) : ""});
  }
  const char* trace() {
    trace_.clear();
    for (const Logged& c : calls_) {
      switch (c.call) {
        case Call::kStart: trace_ += " start(" + std::to_string(c.offset) + ")"; break;
        case Call::kKey: trace_ += " key(" + fuzz::hex(c.key) + ")"; break;
        case Call::kMisuse: trace_ += " misuse(" + std::to_string(c.offset) + ")"; break;
        case Call::kFinish: trace_ += " finish"; break;
      }
    }
    if (calls_.size() == 300) trace_ += " ...";
    return trace_.c_str();
  }

  void start_block(uint64_t off) {
    const uint64_t index = off / fuzz::kWindow;
    int want;
    if (m_.finished) {
      want = LEVELDB_BLOOM_ERR_ALREADY_FINISHED;
    } else if (index < m_.filters) {
      want = LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS;
    } else if (index >= kTooLargeFilters) {
      if (fuzz::skip_known("huge-offset")) return;  // finding 1
      want = LEVELDB_BLOOM_ERR_TOO_LARGE;
    } else if (index >= kMaxFilters) {
      return;  // legal, but up to 4 GiB of offsets: not asked
    } else {
      want = LEVELDB_BLOOM_OK;
    }
    log(Call::kStart, off);
    const int st = leveldb_bloom_filter_block_builder_start_block(rb_, off);
    FUZZ_EXPECT_STATUS(st, want, "start_block(%llu) with %llu filters generated%s\n  calls:%s",
                       static_cast<unsigned long long>(off),
                       static_cast<unsigned long long>(m_.filters),
                       m_.finished ? ", finished" : "", trace());
    if (st != LEVELDB_BLOOM_OK) return;
    lb_.StartBlock(off);
    if (index > m_.filters) {
      if (m_.pending > 0) {
        m_.filters_with_keys++;
        m_.keys_in_filters += m_.pending;
        m_.pending = 0;
      }
      m_.filters = index;
    }
    m_.offset = off;
  }

  void add_key(const std::string& key, bool null_for_empty) {
    if (m_.members.size() >= kMaxKeys) return;
    const char* p = (null_for_empty && key.empty()) ? nullptr : key.data();
    log(Call::kKey, 0, &key);
    const int st = leveldb_bloom_filter_block_builder_add_key(rb_, p, key.size());
    FUZZ_EXPECT_STATUS(st, m_.finished ? LEVELDB_BLOOM_ERR_ALREADY_FINISHED : LEVELDB_BLOOM_OK,
                       "add_key(%s)\n  calls:%s", fuzz::hex(key).c_str(), trace());
    if (st != LEVELDB_BLOOM_OK) return;
    lb_.AddKey(leveldb::Slice(key));
    m_.pending++;
    m_.members.push_back(Member{m_.offset, key});
  }

  void misuse(uint8_t which) {
    log(Call::kMisuse, which % 6);
    const uint8_t* b = nullptr;
    size_t n = 0;
    switch (which % 6) {
      case 0:
        FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_start_block(nullptr, m_.offset),
                           LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "start_block(NULL builder)");
        break;
      case 1:
      {
        // After finish both ALREADY_FINISHED and NULL_ARGUMENT describe this call; the
        // documentation gives no order, so either is accepted then.
        const int st = leveldb_bloom_filter_block_builder_add_key(rb_, nullptr, 1);
        if (!(m_.finished && st == LEVELDB_BLOOM_ERR_ALREADY_FINISHED)) {
          FUZZ_EXPECT_STATUS(st, LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "add_key(NULL key, 1)");
        }
        FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_add_key(nullptr, "k", 1),
                           LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "add_key(NULL builder)");
        break;
      }
      case 2:
        FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_finish(rb_, nullptr, &n),
                           LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "finish(block NULL)");
        FUZZ_CHECK(n == 0, "finish with an error changed *block_len");
        break;
      case 3:
        FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_finish(rb_, &b, nullptr),
                           LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "finish(block_len NULL)");
        FUZZ_CHECK(b == nullptr, "finish with an error changed *block");
        break;
      case 4:
        FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_finish(nullptr, &b, &n),
                           LEVELDB_BLOOM_ERR_NULL_ARGUMENT, "finish(NULL builder)");
        break;
      default: {
        // A length no object can have: refused before anything is read.
        const int st = leveldb_bloom_filter_block_builder_add_key(rb_, "k", SIZE_MAX);
        if (!(m_.finished && st == LEVELDB_BLOOM_ERR_ALREADY_FINISHED)) {
          FUZZ_EXPECT_STATUS(st, LEVELDB_BLOOM_ERR_INVALID_ARGUMENT, "add_key(\"k\", SIZE_MAX)");
        }
        break;
      }
    }
  }

  void finish() {
    log(Call::kFinish);
    const uint8_t* block = nullptr;
    size_t len = 0;
    FUZZ_EXPECT_STATUS(leveldb_bloom_filter_block_builder_finish(rb_, &block, &len),
                       LEVELDB_BLOOM_OK, "finish\n  calls:%s", trace());
    FUZZ_CHECK(block != nullptr || len == 0, "finish returned NULL with length %zu", len);
    const std::string bytes(reinterpret_cast<const char*>(block), len);
    if (m_.finished) {
      FUZZ_CHECK(bytes == block_, "finish again returned other bytes:\n  first %s\n  now   %s",
                 fuzz::hex(block_).c_str(), fuzz::hex(bytes).c_str());
      return;
    }
    m_.finished = true;
    if (m_.pending > 0) {
      m_.filters_with_keys++;
      m_.keys_in_filters += m_.pending;
      m_.pending = 0;
    }
    block_ = bytes;
    const leveldb::Slice stock_block = lb_.Finish();
    if (stock_block.ToString() != block_) {
      fuzz::fail("filter block differs from LevelDB's FilterBlockBuilder\n  bits per key = %d\n"
                 "  calls:%s\n  LevelDB       = %s\n  leveldb-bloom = %s",
                 bpk_, trace(), fuzz::hex(stock_block.ToString(), 1024).c_str(),
                 fuzz::hex(block_, 1024).c_str());
    }
    if (policy_ != nullptr && !counted_) {
      leveldb_bloom_stats s{};
      FUZZ_EXPECT_STATUS(leveldb_bloom_policy_stats(policy_, &s), LEVELDB_BLOOM_ERR_NOT_COUNTED,
                         "stats of an uncounted policy");
    } else if (policy_ != nullptr) {
      leveldb_bloom_stats s{};
      FUZZ_EXPECT_STATUS(leveldb_bloom_policy_stats(policy_, &s), LEVELDB_BLOOM_OK, "stats");
      FUZZ_CHECK(s.filters_built == m_.filters_with_keys && s.keys_added == m_.keys_in_filters,
                 "stats count %llu filters / %llu keys, the builder made %llu / %llu\n  calls:%s",
                 static_cast<unsigned long long>(s.filters_built),
                 static_cast<unsigned long long>(s.keys_added),
                 static_cast<unsigned long long>(m_.filters_with_keys),
                 static_cast<unsigned long long>(m_.keys_in_filters), trace());
    }
  }

  // After finish: no false negatives, and other queries answer as LevelDB's reader.
  void verify_queries() {
    const fuzz::ExactBuffer block(block_);
    fuzz::RustPolicy q(static_cast<int>(m_.members.size() % 20));  // any policy answers alike
    leveldb::FilterBlockReader reader(stock_, block.slice());
    const size_t n = m_.members.size();
    std::vector<uint64_t> offs;
    fuzz::KeySet keys;
    for (const Member& m : m_.members) {
      offs.push_back(m.offset);
      keys.add(m.key);
    }
    keys.seal();
    std::vector<uint8_t> batch(n + 1, 0x55);
    FUZZ_EXPECT_STATUS(
        leveldb_bloom_filter_block_may_match_batch(q.p, block.data(), block.size(), offs.data(),
                                                   keys.ptrs.data(), keys.lens.data(), n,
                                                   batch.data()),
        LEVELDB_BLOOM_OK, "batch query of the members");
    FUZZ_CHECK(batch[n] == 0x55, "batch wrote past its results");
    for (size_t i = 0; i < n; i++) {
      const Member& m = m_.members[i];
      const bool single = leveldb_bloom_filter_block_may_match(
          q.p, block.data(), block.size(), m.offset, keys.ptrs[i], m.key.size());
      const bool stock = reader.KeyMayMatch(m.offset, leveldb::Slice(m.key));
      if (!single || batch[i] != 1 || !stock) {
        fuzz::fail("false negative: key %s added at block offset %llu not found (single %d, "
                   "batch %d, LevelDB reader %d)\n  bits per key = %d\n  calls:%s\n  block = %s",
                   fuzz::hex(m.key).c_str(), static_cast<unsigned long long>(m.offset), single,
                   batch[i], stock, bpk_, trace(), fuzz::hex(block_, 1024).c_str());
      }
      if (i < 256) {
        // The same key one and two windows on, and in the window before.
        const uint64_t others[] = {m.offset + fuzz::kWindow, m.offset + 2 * fuzz::kWindow,
                                   m.offset - fuzz::kWindow};
        for (uint64_t off : others) {
          const bool want = reader.KeyMayMatch(off, leveldb::Slice(m.key));
          const bool got = leveldb_bloom_filter_block_may_match(
              q.p, block.data(), block.size(), off, keys.ptrs[i], m.key.size());
          FUZZ_CHECK(want == got,
                     "reader mismatch at offset %llu for key %s: LevelDB %d, leveldb-bloom %d\n"
                     "  block = %s",
                     static_cast<unsigned long long>(off), fuzz::hex(m.key).c_str(), want, got,
                     fuzz::hex(block_, 1024).c_str());
        }
      }
    }
  }

  Model& model() { return m_; }

 private:
  int bpk_;
  bool counted_;
  const leveldb::FilterPolicy* stock_;
  leveldb::FilterBlockBuilder lb_;
  leveldb_bloom_policy* policy_ = nullptr;
  leveldb_bloom_filter_block_builder* rb_ = nullptr;
  Model m_;
  std::string block_;
  struct Logged {
    Call call;
    uint64_t offset;
    std::string key;
  };
  std::vector<Logged> calls_;
  std::string trace_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t setup = in.u8();
  Harness h(setup & 0x3f, (setup & 0x40) != 0, (setup & 0x80) != 0);
  uint32_t counter = 0;
  for (size_t ops = 0; !in.empty() && ops < kMaxOps; ops++) {
    const uint8_t op = in.u8();
    const Model& m = h.model();
    switch (op % 8) {
      case 0:
      case 1:
        h.start_block(m.offset + in.varint());
        break;
      case 2:
        h.start_block(in.varint());
        break;
      case 3:
        h.start_block((m.offset / fuzz::kWindow + op / 8) * fuzz::kWindow + in.varint());
        break;
      case 4:
      case 5:
        h.add_key(in.lp_bytes(), false);
        break;
      case 6:
        for (uint8_t c = in.u8(); c > 0; c--) {
          char k[4];
          std::memcpy(k, &counter, 4);
          counter++;
          h.add_key(std::string(k, 4), false);
        }
        break;
      default:
        switch ((op / 8) % 4) {
          case 0: h.finish(); break;
          case 1: h.misuse(op / 32); break;
          case 2: h.add_key(std::string(), true); break;
          default: h.start_block(m.filters * fuzz::kWindow); break;
        }
        break;
    }
  }
  h.finish();
  h.verify_queries();
  return 0;
}
