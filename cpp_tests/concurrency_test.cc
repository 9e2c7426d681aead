// Concurrency: eight threads share ONE leveldb_bloom_policy and one set of filters and filter
// blocks (built up front, some by LevelDB, some by leveldb-bloom). For a bounded time each
// thread builds filters (create_filter, create_filter_slices, the create_filter callback,
// its own filter block builder, a short-lived policy of its own) and queries the shared
// filters (single key, callback, batch, filter block single and batch) with its own random
// keys. Every answer must equal the one computed single-threaded before the threads started
// (which equals LevelDB's), every filter and filter block LevelDB's bytes.
//
// The statistics are hammered meanwhile: in phase 1 a reader thread reads the policy's and
// the process-wide counts without resetting (each read must be monotonic and within the
// other), and afterwards the counts must equal, exactly, what the threads did. In phase 2
// two more threads reset and read the policy's and the process-wide counts concurrently
// with the work; every read must be a plausible count, and once the threads are joined a
// reset must give zero and then count exactly again.
//
// scripts/instrumented tsan runs this under ThreadSanitizer. The Rust library is not instrumented, so
// TSan sees only this C++ side (its threads, the shared buffers it hands the library, the
// heap blocks the library allocates and frees through malloc); races inside the library
// are caught by the exact counts and answers checked here, not by TSan.
//
// Environment: LEVELDB_BLOOM_SEED (random seed), LEVELDB_BLOOM_CONCURRENCY_MS (total time of
// the two phases, default 3000; each thread also completes at least one pass over its
// work), LEVELDB_BLOOM_CONCURRENCY_THREADS (worker threads, default 8).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "leveldb_filter_block.h"
#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"
#include "leveldb_bloom.h"


namespace {

static_assert(sizeof(leveldb::Slice) == sizeof(leveldb_bloom_slice), "Slice layout");

constexpr int kBitsPerKey = 10;
constexpr uint64_t kWindow = 2048;  // LevelDB's filter window (1 << kFilterBaseLg)

// ---------------------------------------------------------------------------
// Byte buffers and key arrays.
// ---------------------------------------------------------------------------

// Bytes in an allocation of exactly their size, so that any overread is a real one.
struct Bytes {
  Bytes() = default;
  explicit Bytes(const std::string& s) : len(s.size()), data(new uint8_t[s.size() ? s.size() : 1]) {
    if (len != 0) std::memcpy(data.get(), s.data(), len);
  }
  std::string str() const { return std::string(reinterpret_cast<const char*>(data.get()), len); }
  size_t len = 0;
  std::unique_ptr<uint8_t[]> data;
};

// Keys with the parallel arrays the C API takes. The arrays point into the strings, which a
// move keeps in place (the vector's buffer changes hands) and a copy would not: move-only.
struct Keys {
  Keys() = default;
  Keys(Keys&&) = default;
  Keys& operator=(Keys&&) = default;
  Keys(const Keys&) = delete;
  Keys& operator=(const Keys&) = delete;

  void add(std::string k) { keys.push_back(std::move(k)); }
  // Call once the keys are final: the arrays point into `keys`.
  void seal() {
    ptrs.clear();
    lens.clear();
    slices.clear();
    for (const std::string& k : keys) {
      ptrs.push_back(k.data());
      lens.push_back(k.size());
      slices.push_back(leveldb_bloom_slice{k.data(), k.size()});
    }
  }
  size_t size() const { return keys.size(); }
  const char* const* p() const { return ptrs.empty() ? nullptr : ptrs.data(); }
  const size_t* l() const { return lens.empty() ? nullptr : lens.data(); }
  const leveldb_bloom_slice* s() const { return slices.empty() ? nullptr : slices.data(); }
  std::vector<leveldb::Slice> leveldb_slices() const {
    return std::vector<leveldb::Slice>(keys.begin(), keys.end());
  }

  std::vector<std::string> keys;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  std::vector<leveldb_bloom_slice> slices;
};

std::string LevelDBFilter(const leveldb::FilterPolicy& policy, const Keys& keys) {
  const std::vector<leveldb::Slice> slices = keys.leveldb_slices();
  std::string dst;
  policy.CreateFilter(slices.data(), static_cast<int>(slices.size()), &dst);
  return dst;
}

// Keys of 0..max_len bytes, with some duplicates and empty keys.
Keys RandomKeys(std::mt19937_64& rng, size_t n, size_t max_len) {
  Keys k;
  for (size_t i = 0; i < n; i++) {
    const uint64_t r = rng() % 100;
    if (r < 5 && !k.keys.empty()) {
      k.add(k.keys[rng() % k.keys.size()]);
    } else if (r < 7) {
      k.add(std::string());
    } else {
      k.add(harness::random_key(rng, max_len));
    }
  }
  k.seal();
  return k;
}

size_t RandomKeyCount(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return rng() % 4;     // 0..3 (0: the smallest filter)
    case 1: return rng() % 1001;  // up to 1,000
    default: return rng() % 201;  // up to 200: many filter sizes, sharing cache slots
  }
}

// ---------------------------------------------------------------------------
// Filter block layouts. Every StartBlock moves to a later 2 KiB window, so a block holding
// keys gives exactly one filter built over its keys (what the statistics count).
// ---------------------------------------------------------------------------

struct Layout {
  struct Op {
    bool start;       // StartBlock(offset), else AddKey(key)
    uint64_t offset;
    std::string key;
  };
  std::vector<Op> ops;
  std::vector<uint64_t> offsets;                                // each StartBlock offset
  std::vector<std::pair<uint64_t, std::string>> members;       // (block offset, key)
  uint64_t filters_with_keys = 0;
  uint64_t keys = 0;
};

Layout RandomLayout(std::mt19937_64& rng) {
  Layout l;
  const size_t blocks = 1 + rng() % 12;
  uint64_t offset = 0;
  for (size_t b = 0; b < blocks; b++) {
    if (b > 0) offset += kWindow * (1 + rng() % 3) + rng() % kWindow;
    l.ops.push_back(Layout::Op{true, offset, std::string()});
    l.offsets.push_back(offset);
    const size_t n = (rng() % 5 == 0) ? 0 : 1 + rng() % 40;
    for (size_t i = 0; i < n; i++) {
      std::string k = harness::random_key(rng, 24);
      l.members.emplace_back(offset, k);
      l.ops.push_back(Layout::Op{false, 0, std::move(k)});
    }
    l.filters_with_keys += n > 0;
    l.keys += n;
  }
  return l;
}

std::string LevelDBBlock(const leveldb::FilterPolicy* policy, const Layout& l) {
  leveldb::FilterBlockBuilder b(policy);
  for (const Layout::Op& op : l.ops) {
    if (op.start) {
      b.StartBlock(op.offset);
    } else {
      b.AddKey(leveldb::Slice(op.key));
    }
  }
  return b.Finish().ToString();
}

// Builds `l` with a leveldb-bloom builder of `policy`; "" and a message on any error.
std::string RustBlock(const leveldb_bloom_policy* policy, const Layout& l, std::string* error) {
  leveldb_bloom_filter_block_builder* b = leveldb_bloom_filter_block_builder_create(policy);
  if (b == nullptr) {
    *error = "leveldb_bloom_filter_block_builder_create returned NULL";
    return std::string();
  }
  int st = LEVELDB_BLOOM_OK;
  for (const Layout::Op& op : l.ops) {
    st = op.start ? leveldb_bloom_filter_block_builder_start_block(b, op.offset)
                  : leveldb_bloom_filter_block_builder_add_key(b, op.key.data(), op.key.size());
    if (st != LEVELDB_BLOOM_OK) break;
  }
  const uint8_t* block = nullptr;
  size_t block_len = 0;
  if (st == LEVELDB_BLOOM_OK) st = leveldb_bloom_filter_block_builder_finish(b, &block, &block_len);
  std::string out;
  if (st == LEVELDB_BLOOM_OK) {
    out.assign(reinterpret_cast<const char*>(block), block_len);
  } else {
    *error = std::string("filter block builder: ") + leveldb_bloom_status_message(st);
  }
  leveldb_bloom_filter_block_builder_destroy(b);
  return out;
}

// ---------------------------------------------------------------------------
// The shared state and each thread's precomputed work.
// ---------------------------------------------------------------------------

struct SharedFilter {
  Keys members;
  Bytes bytes;
  bool leveldb_built;
};

struct SharedBlock {
  Layout layout;
  Bytes bytes;
  bool leveldb_built;
};

struct BuildJob {
  Keys keys;
  std::string expected;  // LevelDB's CreateFilter
};

struct BlockJob {
  Layout layout;
  std::string expected;  // LevelDB's FilterBlockBuilder
};

struct QueryJob {
  size_t filter;                  // index into the shared filters
  Keys keys;
  std::vector<uint8_t> expected;  // LevelDB's KeyMayMatch = the single-threaded answer
  uint64_t no_match = 0;
};

struct BlockQueryJob {
  size_t block;  // index into the shared blocks
  std::vector<uint64_t> offsets;
  Keys keys;
  std::vector<uint8_t> expected;  // LevelDB's FilterBlockReader = the single-threaded answer
  uint64_t no_match = 0;
};

struct Work {
  std::vector<BuildJob> builds;
  std::vector<BlockJob> blocks;
  std::vector<QueryJob> queries;
  std::vector<BlockQueryJob> block_queries;
  size_t rounds_per_pass() const {
    return std::max({builds.size(), blocks.size(), queries.size(), block_queries.size()});
  }
};

// What a thread did, counted as the statistics count it.
struct Tally {
  uint64_t filters_built = 0;
  uint64_t keys_added = 0;
  uint64_t queries = 0;
  uint64_t no_match = 0;
  void add(const Tally& o) {
    filters_built += o.filters_built;
    keys_added += o.keys_added;
    queries += o.queries;
    no_match += o.no_match;
  }
};

std::string Describe(const leveldb_bloom_stats& s) {
  return "filters_built=" + std::to_string(s.filters_built) +
         " keys_added=" + std::to_string(s.keys_added) + " queries=" + std::to_string(s.queries) +
         " no_match=" + std::to_string(s.no_match);
}

std::string Describe(const Tally& t) {
  return "filters_built=" + std::to_string(t.filters_built) +
         " keys_added=" + std::to_string(t.keys_added) + " queries=" + std::to_string(t.queries) +
         " no_match=" + std::to_string(t.no_match);
}

// Failures found on any thread: counted, and the first few kept for the main thread.
class Failures {
 public:
  void add(const std::string& what) {
    if (count_.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back(what);
    }
  }
  uint64_t count() const { return count_.load(); }
  void report() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& m : messages_) ADD_FAILURE() << m;
  }

 private:
  std::atomic<uint64_t> count_{0};
  std::mutex mu_;
  std::vector<std::string> messages_;
};

class Concurrency {
 public:
  Concurrency()
      : threads_(harness::env_count("LEVELDB_BLOOM_CONCURRENCY_THREADS", 8)),
        total_ms_(harness::env_count("LEVELDB_BLOOM_CONCURRENCY_MS", 3000)),
        stock_(leveldb::NewBloomFilterPolicy(kBitsPerKey)),
        policy_(support::counted(leveldb_bloom_policy_create(kBitsPerKey))) {}

  // Builds the shared filters and blocks and every thread's work, single-threaded, with
  // LevelDB's answers checked against the shared policy's.
  void Prepare() {
    ASSERT_NE(policy_.get(), nullptr);
    ASSERT_GE(threads_, 1u);
    std::mt19937_64 rng(harness::seed() ^ 0xC0C0C0C0ull);

    // 24 shared filters of many sizes: even ones built by LevelDB, odd ones by leveldb-bloom
    // (after checking the bytes are LevelDB's).
    for (int i = 0; i < 24; i++) {
      SharedFilter f;
      f.members = RandomKeys(rng, RandomKeyCount(rng), (rng() % 2) ? 16 : 64);
      f.leveldb_built = i % 2 == 0;
      const std::string want = LevelDBFilter(*stock_, f.members);
      const std::string got = harness::rust_create_filter(policy_.get(), f.members.keys);
      ASSERT_EQ(harness::to_hex(got), harness::to_hex(want)) << "shared filter " << i;
      f.bytes = Bytes(f.leveldb_built ? want : got);
      filters_.push_back(std::move(f));
    }
    // 4 shared filter blocks: LevelDB's and leveldb-bloom's (the same bytes).
    for (int i = 0; i < 4; i++) {
      SharedBlock b;
      b.layout = RandomLayout(rng);
      b.leveldb_built = i % 2 == 0;
      const std::string want = LevelDBBlock(stock_.get(), b.layout);
      std::string error;
      const std::string got = RustBlock(policy_.get(), b.layout, &error);
      ASSERT_EQ(error, "");
      ASSERT_EQ(harness::to_hex(got), harness::to_hex(want)) << "shared block " << i;
      b.bytes = Bytes(b.leveldb_built ? want : got);
      blocks_.push_back(std::move(b));
    }

    work_.resize(threads_);
    for (uint64_t t = 0; t < threads_; t++) {
      std::mt19937_64 trng(harness::seed() ^ (0x7E57ull << 32) ^ t);
      Work& w = work_[t];
      for (int i = 0; i < 8; i++) w.builds.push_back(MakeBuildJob(trng));
      for (int i = 0; i < 4; i++) w.blocks.push_back(MakeBlockJob(trng));
      for (int i = 0; i < 8; i++) ASSERT_NO_FATAL_FAILURE(AddQueryJob(trng, &w));
      for (int i = 0; i < 4; i++) ASSERT_NO_FATAL_FAILURE(AddBlockQueryJob(trng, &w));
    }
    uint64_t no = 0, all = 0;
    for (const Work& w : work_) {
      for (const QueryJob& j : w.queries) no += j.no_match, all += j.keys.size();
    }
    // Both answers occur, or the comparisons prove little.
    ASSERT_GT(no, 0u);
    ASSERT_LT(no, all);
  }

  // A thread's jobs, drawn from its own random source; the query jobs' answers are
  // LevelDB's, checked single-threaded against the shared policy's.
  BuildJob MakeBuildJob(std::mt19937_64& rng) {
    BuildJob j;
    j.keys = RandomKeys(rng, RandomKeyCount(rng), (rng() % 2) ? 16 : 100);
    j.expected = LevelDBFilter(*stock_, j.keys);
    return j;
  }

  BlockJob MakeBlockJob(std::mt19937_64& rng) {
    BlockJob j;
    j.layout = RandomLayout(rng);
    j.expected = LevelDBBlock(stock_.get(), j.layout);
    return j;
  }

  // 200 keys asked of one shared filter: half its members, half random.
  void AddQueryJob(std::mt19937_64& rng, Work* w) {
    QueryJob j;
    j.filter = rng() % filters_.size();
    const SharedFilter& f = filters_[j.filter];
    for (int k = 0; k < 200; k++) {
      if (rng() % 2 == 0 && f.members.size() > 0) {
        j.keys.add(f.members.keys[rng() % f.members.size()]);
      } else {
        j.keys.add(harness::random_key(rng, 24));
      }
    }
    j.keys.seal();
    const leveldb::Slice filter(reinterpret_cast<const char*>(f.bytes.data.get()), f.bytes.len);
    for (const std::string& k : j.keys.keys) {
      const bool want = stock_->KeyMayMatch(leveldb::Slice(k), filter);
      const bool got = leveldb_bloom_key_may_match(policy_.get(), k.data(), k.size(),
                                                   f.bytes.data.get(), f.bytes.len);
      ASSERT_EQ(got, want) << "single-threaded answer differs from LevelDB's";
      j.expected.push_back(want);
      j.no_match += !want;
    }
    w->queries.push_back(std::move(j));
  }

  // 200 keys asked of one shared block: half its members at their offsets, a quarter random
  // at one of its offsets, a quarter random anywhere in its first 64 windows.
  void AddBlockQueryJob(std::mt19937_64& rng, Work* w) {
    BlockQueryJob j;
    j.block = rng() % blocks_.size();
    const SharedBlock& b = blocks_[j.block];
    for (int k = 0; k < 200; k++) {
      const uint64_t r = rng() % 4;
      if (r < 2 && !b.layout.members.empty()) {
        const auto& m = b.layout.members[rng() % b.layout.members.size()];
        j.offsets.push_back(m.first);
        j.keys.add(m.second);
      } else {
        j.offsets.push_back(r == 2 ? b.layout.offsets[rng() % b.layout.offsets.size()]
                                   : rng() % (64 * kWindow));
        j.keys.add(harness::random_key(rng, 24));
      }
    }
    j.keys.seal();
    const leveldb::Slice contents(reinterpret_cast<const char*>(b.bytes.data.get()), b.bytes.len);
    leveldb::FilterBlockReader reader(stock_.get(), contents);
    for (size_t k = 0; k < j.keys.size(); k++) {
      const std::string& key = j.keys.keys[k];
      const bool want = reader.KeyMayMatch(j.offsets[k], leveldb::Slice(key));
      const bool got = leveldb_bloom_filter_block_may_match(
          policy_.get(), b.bytes.data.get(), b.bytes.len, j.offsets[k], key.data(), key.size());
      ASSERT_EQ(got, want) << "single-threaded filter block answer differs from LevelDB's";
      j.expected.push_back(want);
      j.no_match += !want;
    }
    w->block_queries.push_back(std::move(j));
  }

  // One round of thread `t`'s work (job `round` of each kind), tallied into `tally`.
  void Round(size_t t, size_t round, Tally* tally) {
    const Work& w = work_[t];
    const leveldb_bloom_policy* p = policy_.get();
    const std::string where = "thread " + std::to_string(t) + " round " + std::to_string(round);

    // Filters, three ways, into exact-size buffers.
    const BuildJob& b = w.builds[round % w.builds.size()];
    const size_t need = leveldb_bloom_filter_len(p, b.keys.size());
    if (need != b.expected.size()) {
      failures_.add(where + ": leveldb_bloom_filter_len " + std::to_string(need) + ", LevelDB's " +
                    std::to_string(b.expected.size()));
    } else {
      for (int how = 0; how < 2; how++) {
        std::unique_ptr<uint8_t[]> out(new uint8_t[need]);
        size_t out_len = 0;
        const int st =
            how == 0 ? leveldb_bloom_create_filter(p, b.keys.p(), b.keys.l(), b.keys.size(),
                                                   out.get(), need, &out_len)
                     : leveldb_bloom_create_filter_slices(p, b.keys.s(), b.keys.size(), out.get(),
                                                          need, &out_len);
        if (st != LEVELDB_BLOOM_OK || out_len != need ||
            std::memcmp(out.get(), b.expected.data(), need) != 0) {
          failures_.add(where + (how == 0 ? ": create_filter" : ": create_filter_slices") +
                        " status " + std::to_string(st) + ", not LevelDB's filter");
        }
        tally->filters_built++;
        tally->keys_added += b.keys.size();
      }
    }
    size_t cb_len = 0;
    char* cb = leveldb_bloom_cb_create_filter(const_cast<leveldb_bloom_policy*>(p), b.keys.p(),
                                              b.keys.l(), static_cast<int>(b.keys.size()), &cb_len);
    if (cb == nullptr || std::string(cb, cb_len) != b.expected) {
      failures_.add(where + ": cb_create_filter is not LevelDB's filter");
    }
    std::free(cb);
    tally->filters_built++;
    tally->keys_added += b.keys.size();

    // A filter block with this thread's own builder.
    const BlockJob& bj = w.blocks[round % w.blocks.size()];
    std::string error;
    const std::string block = RustBlock(p, bj.layout, &error);
    if (!error.empty() || block != bj.expected) {
      failures_.add(where + ": filter block is not LevelDB's " + error);
    }
    tally->filters_built += bj.layout.filters_with_keys;
    tally->keys_added += bj.layout.keys;

    // Queries on a shared filter: single, callback, batch.
    const QueryJob& q = w.queries[round % w.queries.size()];
    const SharedFilter& f = filters_[q.filter];
    uint64_t wrong = 0;
    for (size_t i = 0; i < q.keys.size(); i++) {
      const std::string& k = q.keys.keys[i];
      const bool a =
          leveldb_bloom_key_may_match(p, k.data(), k.size(), f.bytes.data.get(), f.bytes.len);
      const uint8_t c = leveldb_bloom_cb_key_may_match(
          const_cast<leveldb_bloom_policy*>(p), k.data(), k.size(),
          reinterpret_cast<const char*>(f.bytes.data.get()), f.bytes.len);
      wrong += (a != (q.expected[i] != 0)) + (c != q.expected[i]);
    }
    std::vector<uint8_t> results(q.keys.size(), 0x55);
    const int st =
        leveldb_bloom_key_may_match_batch(p, q.keys.p(), q.keys.l(), q.keys.size(),
                                          f.bytes.data.get(), f.bytes.len, results.data());
    if (st != LEVELDB_BLOOM_OK || results != q.expected) wrong++;
    if (wrong != 0) {
      failures_.add(where + ": " + std::to_string(wrong) + " wrong answers on shared filter " +
                    std::to_string(q.filter) +
                    (f.leveldb_built ? " (LevelDB-built)" : " (Rust-built)"));
    }
    tally->queries += 3 * q.keys.size();
    tally->no_match += 3 * q.no_match;

    // Queries on a shared filter block: single and batch.
    const BlockQueryJob& bq = w.block_queries[round % w.block_queries.size()];
    const SharedBlock& sb = blocks_[bq.block];
    wrong = 0;
    for (size_t i = 0; i < bq.keys.size(); i++) {
      const std::string& k = bq.keys.keys[i];
      const bool a = leveldb_bloom_filter_block_may_match(p, sb.bytes.data.get(), sb.bytes.len,
                                                          bq.offsets[i], k.data(), k.size());
      wrong += a != (bq.expected[i] != 0);
    }
    results.assign(bq.keys.size(), 0x55);
    const int bst = leveldb_bloom_filter_block_may_match_batch(
        p, sb.bytes.data.get(), sb.bytes.len, bq.offsets.data(), bq.keys.p(), bq.keys.l(),
        bq.keys.size(), results.data());
    if (bst != LEVELDB_BLOOM_OK || results != bq.expected) wrong++;
    if (wrong != 0) {
      failures_.add(where + ": " + std::to_string(wrong) + " wrong answers on shared block " +
                    std::to_string(bq.block));
    }
    tally->queries += 2 * bq.keys.size();
    tally->no_match += 2 * bq.no_match;

    // The name, from any thread.
    if (std::strcmp(leveldb_bloom_policy_name(p), "leveldb.BuiltinBloomFilter2") != 0) {
      failures_.add(where + ": policy name");
    }
  }

  // A short-lived policy of the thread's own: created, used and destroyed while the others
  // work (the process-wide registry takes it in and retires its counts).
  void OwnPolicy(size_t t, size_t round, Tally* tally) {
    const BuildJob& b = work_[t].builds[round % work_[t].builds.size()];
    leveldb_bloom_policy* own = support::counted(leveldb_bloom_policy_create(kBitsPerKey));
    if (own == nullptr) {
      failures_.add("leveldb_bloom_policy_create returned NULL");
      return;
    }
    size_t cb_len = 0;
    char* cb = leveldb_bloom_cb_create_filter(own, b.keys.p(), b.keys.l(),
                                              static_cast<int>(b.keys.size()), &cb_len);
    if (cb == nullptr || std::string(cb, cb_len) != b.expected) {
      failures_.add("own policy: cb_create_filter is not LevelDB's filter");
    }
    tally->filters_built++;
    tally->keys_added += b.keys.size();
    if (cb != nullptr && !b.keys.keys.empty()) {
      const std::string& k = b.keys.keys[0];
      if (leveldb_bloom_cb_key_may_match(own, k.data(), k.size(), cb, cb_len) != 1) {
        failures_.add("own policy: an inserted key answered no match");
      }
      tally->queries++;
    }
    std::free(cb);
    leveldb_bloom_policy_destroy(own);
  }

  // Runs the workers for `ms` milliseconds (and at least one pass each) with `extra`
  // threads alongside; returns what the workers did on the shared policy and on their own.
  using Extra = std::function<void(const std::atomic<bool>& stop)>;
  void RunPhase(uint64_t ms, const std::vector<Extra>& extra, Tally* shared_total,
                Tally* own_total, uint64_t* rounds_total) {
    std::atomic<bool> stop{false};
    std::vector<Tally> shared(threads_), own(threads_);
    std::vector<uint64_t> rounds(threads_, 0);
    std::atomic<uint64_t> ready{0};
    std::vector<std::thread> workers;
    for (size_t t = 0; t < threads_; t++) {
      workers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads_) std::this_thread::yield();  // start together
        const size_t min_rounds = work_[t].rounds_per_pass();
        for (size_t r = 0; r < min_rounds || !stop.load(std::memory_order_relaxed); r++) {
          Round(t, r, &shared[t]);
          if (r % 4 == t % 4) OwnPolicy(t, r, &own[t]);
          rounds[t]++;
        }
      });
    }
    std::vector<std::thread> others;
    for (const auto& fn : extra) others.emplace_back([&stop, &fn] { fn(stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    stop.store(true);
    for (std::thread& w : workers) w.join();
    for (std::thread& o : others) o.join();
    for (size_t t = 0; t < threads_; t++) {
      shared_total->add(shared[t]);
      own_total->add(own[t]);
      *rounds_total += rounds[t];
    }
  }

  uint64_t threads_;
  uint64_t total_ms_;
  std::unique_ptr<const leveldb::FilterPolicy> stock_;
  harness::RustPolicy policy_;
  std::vector<SharedFilter> filters_;
  std::vector<SharedBlock> blocks_;
  std::vector<Work> work_;
  Failures failures_;
};

bool Plausible(const leveldb_bloom_stats& s, const Tally& bound) {
  return s.filters_built <= bound.filters_built && s.keys_added <= bound.keys_added &&
         s.queries <= bound.queries && s.no_match <= bound.no_match && s.no_match <= s.queries;
}

bool AtLeast(const leveldb_bloom_stats& a, const leveldb_bloom_stats& b) {
  return a.filters_built >= b.filters_built && a.keys_added >= b.keys_added &&
         a.queries >= b.queries && a.no_match >= b.no_match;
}

leveldb_bloom_stats Minus(const leveldb_bloom_stats& a, const leveldb_bloom_stats& b) {
  return leveldb_bloom_stats{a.filters_built - b.filters_built, a.keys_added - b.keys_added,
                             a.queries - b.queries, a.no_match - b.no_match};
}

bool Equal(const leveldb_bloom_stats& s, const Tally& t) {
  return s.filters_built == t.filters_built && s.keys_added == t.keys_added &&
         s.queries == t.queries && s.no_match == t.no_match;
}

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(ConcurrencyOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kStaticArchive);
}

TEST(Concurrency, SharedPolicyFiltersAndStatistics) {
  Concurrency c;
  c.Prepare();
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const leveldb_bloom_policy* p = c.policy_.get();
  std::printf("[concurrency] %llu worker threads, %llu ms, %zu shared filters, %zu shared blocks\n",
              static_cast<unsigned long long>(c.threads_),
              static_cast<unsigned long long>(c.total_ms_), c.filters_.size(), c.blocks_.size());

  // ---- Phase 1: no resets. The counts must be exactly what the threads did. ----
  ASSERT_EQ(leveldb_bloom_policy_stats_reset(p), LEVELDB_BLOOM_OK);
  leveldb_bloom_stats g0{}, p0{};
  ASSERT_EQ(leveldb_bloom_global_stats(&g0), LEVELDB_BLOOM_OK);
  ASSERT_EQ(leveldb_bloom_policy_stats(p, &p0), LEVELDB_BLOOM_OK);
  ASSERT_TRUE(Equal(p0, Tally{})) << Describe(p0);

  std::atomic<uint64_t> reads{0};
  auto reader = [&](const std::atomic<bool>& stop) {
    leveldb_bloom_stats last_p{}, last_g = g0;
    while (!stop.load(std::memory_order_relaxed)) {
      leveldb_bloom_stats ps{}, gs{};
      if (leveldb_bloom_policy_stats(p, &ps) != LEVELDB_BLOOM_OK ||
          leveldb_bloom_global_stats(&gs) != LEVELDB_BLOOM_OK) {
        c.failures_.add("phase 1: a statistics read failed");
        return;
      }
      // Monotonic without resets; the process-wide counts, read later, include the
      // policy's; a snapshot never has more no-match answers than queries.
      if (!AtLeast(ps, last_p) || !AtLeast(gs, last_g) || !AtLeast(Minus(gs, g0), ps) ||
          ps.no_match > ps.queries || gs.no_match > gs.queries) {
        c.failures_.add("phase 1: inconsistent reads: policy " + Describe(ps) + " after " +
                        Describe(last_p) + "; global " + Describe(gs) + " after " +
                        Describe(last_g) + " (start " + Describe(g0) + ")");
        return;
      }
      last_p = ps;
      last_g = gs;
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  };
  Tally shared1, own1;
  uint64_t rounds1 = 0;
  c.RunPhase(c.total_ms_ / 2, {reader}, &shared1, &own1, &rounds1);

  leveldb_bloom_stats p1{}, g1{};
  ASSERT_EQ(leveldb_bloom_policy_stats(p, &p1), LEVELDB_BLOOM_OK);
  ASSERT_EQ(leveldb_bloom_global_stats(&g1), LEVELDB_BLOOM_OK);
  Tally all1 = shared1;
  all1.add(own1);
  EXPECT_TRUE(Equal(p1, shared1)) << "policy counts " << Describe(p1) << ", threads did "
                                  << Describe(shared1);
  EXPECT_TRUE(Equal(Minus(g1, g0), all1))
      << "process-wide counts grew by " << Describe(Minus(g1, g0)) << ", threads did "
      << Describe(all1);
  std::printf("[concurrency] phase 1: %llu rounds, %llu statistics reads; counted %s\n",
              static_cast<unsigned long long>(rounds1),
              static_cast<unsigned long long>(reads.load()), Describe(p1).c_str());

  // ---- Phase 2: resets and reads of both counts race the work. ----
  // A read racing resets and work sees each count at some moment since a reset, so it is
  // at most everything the process ever did; a count taken against a newer baseline would
  // wrap around to near 2^64 instead.
  std::atomic<uint64_t> resets{0};
  const uint64_t kMost = uint64_t{1} << 48;
  const Tally bound{kMost, kMost, kMost, kMost};
  auto policy_resetter = [&](const std::atomic<bool>& stop) {
    do {
      leveldb_bloom_stats s{};
      if (leveldb_bloom_policy_stats_reset(p) != LEVELDB_BLOOM_OK ||
          leveldb_bloom_policy_stats(p, &s) != LEVELDB_BLOOM_OK) {
        c.failures_.add("phase 2: policy reset or read failed");
        return;
      }
      if (!Plausible(s, bound)) {
        c.failures_.add("phase 2: policy read after a reset: " + Describe(s));
        return;
      }
      resets.fetch_add(1, std::memory_order_relaxed);
    } while (!stop.load(std::memory_order_relaxed));
  };
  auto global_resetter = [&](const std::atomic<bool>& stop) {
    do {
      leveldb_bloom_stats s{}, ps{};
      leveldb_bloom_global_stats_reset();
      if (leveldb_bloom_global_stats(&s) != LEVELDB_BLOOM_OK ||
          leveldb_bloom_policy_stats(p, &ps) != LEVELDB_BLOOM_OK) {
        c.failures_.add("phase 2: global read failed");
        return;
      }
      if (!Plausible(s, bound) || !Plausible(ps, bound)) {
        c.failures_.add("phase 2: read while resetting: global " + Describe(s) + ", policy " +
                        Describe(ps));
        return;
      }
      resets.fetch_add(1, std::memory_order_relaxed);
    } while (!stop.load(std::memory_order_relaxed));
  };
  Tally shared2, own2;
  uint64_t rounds2 = 0;
  c.RunPhase(c.total_ms_ - c.total_ms_ / 2, {policy_resetter, global_resetter}, &shared2, &own2,
             &rounds2);

  // Joined: the last reset came before the end, so what remains is at most phase 2's work.
  leveldb_bloom_stats p2{}, g2{};
  ASSERT_EQ(leveldb_bloom_policy_stats(p, &p2), LEVELDB_BLOOM_OK);
  ASSERT_EQ(leveldb_bloom_global_stats(&g2), LEVELDB_BLOOM_OK);
  Tally all2 = shared2;
  all2.add(own2);
  EXPECT_TRUE(Plausible(p2, shared2)) << Describe(p2) << " vs " << Describe(shared2);
  EXPECT_TRUE(Plausible(g2, all2)) << Describe(g2) << " vs " << Describe(all2);
  std::printf("[concurrency] phase 2: %llu rounds, %llu resets; counted %s since the last reset\n",
              static_cast<unsigned long long>(rounds2),
              static_cast<unsigned long long>(resets.load()), Describe(p2).c_str());

  // Quiescent: a reset gives zero, and counting resumes exactly.
  ASSERT_EQ(leveldb_bloom_policy_stats_reset(p), LEVELDB_BLOOM_OK);
  leveldb_bloom_global_stats_reset();
  leveldb_bloom_stats z{}, gz{};
  ASSERT_EQ(leveldb_bloom_policy_stats(p, &z), LEVELDB_BLOOM_OK);
  ASSERT_EQ(leveldb_bloom_global_stats(&gz), LEVELDB_BLOOM_OK);
  EXPECT_TRUE(Equal(z, Tally{})) << Describe(z);
  EXPECT_TRUE(Equal(gz, Tally{})) << Describe(gz);
  Tally one;
  c.Round(0, 0, &one);
  leveldb_bloom_stats after{}, gafter{};
  ASSERT_EQ(leveldb_bloom_policy_stats(p, &after), LEVELDB_BLOOM_OK);
  ASSERT_EQ(leveldb_bloom_global_stats(&gafter), LEVELDB_BLOOM_OK);
  EXPECT_TRUE(Equal(after, one)) << Describe(after) << " vs " << Describe(one);
  EXPECT_TRUE(Equal(gafter, one)) << Describe(gafter) << " vs " << Describe(one);

  c.failures_.report();
  EXPECT_EQ(c.failures_.count(), 0u);
  EXPECT_GT(reads.load(), 0u);
  EXPECT_GT(resets.load(), 0u);
}

}  // namespace
