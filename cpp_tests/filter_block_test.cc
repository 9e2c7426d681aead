// The filter block of a table: the Rust builder and reader against LevelDB 1.23's own
// leveldb::FilterBlockBuilder / leveldb::FilterBlockReader (table/filter_block.cc).
//
// Debian's libleveldb-dev installs no table/filter_block.h, but its static libleveldb.a
// exports both classes. They are declared below exactly as LevelDB 1.23's header does
// (same members, same order, same types), and this executable links the static archive.
// Every expectation is what the real LevelDB code answers in the same run.
//
// Environment: LEVELDB_BLOOM_SEED (random seed), LEVELDB_BLOOM_FB_LAYOUTS (number of random
// block layouts, default 10000), LEVELDB_BLOOM_FB_RANDOM_BLOCKS (fully random short blocks,
// default 1000000).


#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "leveldb_filter_block.h"
#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"
#include "leveldb_bloom.h"


namespace {

// leveldb_filter_block.h checks the classes' sizes at compile time; the tests below also
// check the members' offsets at run time.

constexpr uint64_t kWindow = 2048;  // 1 << kFilterBaseLg

template <typename T>
T load_at(const void* obj, size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(obj) + offset, sizeof v);
  return v;
}

// The block's words are little-endian whatever the architecture (LevelDB's Fixed32).
void put_le32(char* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t get_le32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

struct StockPolicy {
  explicit StockPolicy(int bpk) : p(leveldb::NewBloomFilterPolicy(bpk)) {}
  std::unique_ptr<const leveldb::FilterPolicy> p;
};

// One random block layout: the calls made on a builder, in order.
struct Op {
  enum Kind { kStart, kKey } kind;
  uint64_t offset;  // kStart
  std::string key;  // kKey
};

struct Layout {
  int bpk = 10;
  std::vector<Op> ops;
  std::vector<uint64_t> offsets;    // every StartBlock offset used
  std::vector<std::string> keys;    // every key added
  // (offset of the StartBlock preceding the key, key): must match in both readers.
  std::vector<std::pair<uint64_t, std::string>> members;
};

int random_bpk(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return static_cast<int>(rng() % 3);        // 0..2: k = 1
    case 1: return 16;
    case 2: return static_cast<int>(rng() % 60);       // up to k = 30 and beyond
    default: return 10;
  }
}

std::string layout_key(std::mt19937_64& rng, const std::vector<std::string>& so_far) {
  switch (rng() % 16) {
    case 0: return std::string();  // the empty key
    case 1:
      if (!so_far.empty()) return so_far[rng() % so_far.size()];  // duplicate
      return harness::random_key(rng, 24);
    case 2: return harness::random_key(rng, 200);
    case 3: {  // only bytes >= 0x80
      std::string k = harness::random_key(rng, 16);
      for (char& c : k) c = static_cast<char>(static_cast<unsigned char>(c) | 0x80);
      return k;
    }
    default: return harness::random_key(rng, 24);
  }
}

size_t keys_in_block(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
    case 1: return 0;
    case 2: return 1;
    case 3: return static_cast<size_t>(rng() % 300);
    default: return static_cast<size_t>(rng() % 20);
  }
}

// The next StartBlock offset. LevelDB only requires that its window is not before a window
// already generated (it asserts otherwise), so the offset may fall back within the open window.
uint64_t next_offset(std::mt19937_64& rng, uint64_t prev, uint64_t generated) {
  const uint64_t lowest = generated * kWindow;  // first legal offset
  uint64_t base = prev;
  switch (rng() % 10) {
    case 0: return lowest + rng() % kWindow;               // anywhere in the open window
    case 1: base += rng() % 64; break;                       // tiny step (same window)
    case 2: base += kWindow * (2 + rng() % 8) + rng() % kWindow; break;  // several windows
    case 3: base += kWindow * (rng() % 200); break;          // many empty windows
    case 4: base += kWindow; break;                          // exactly one window
    case 5: base = (base / kWindow + 1) * kWindow - 1; break;  // last byte of the window
    default: base += rng() % (3 * kWindow); break;           // a typical data block
  }
  return base < lowest ? lowest : base;
}

Layout random_layout(std::mt19937_64& rng) {
  Layout l;
  l.bpk = random_bpk(rng);
  const size_t blocks = (rng() % 10 == 0) ? 0 : 1 + rng() % 40;
  uint64_t prev = 0;
  uint64_t generated = 0;  // filters LevelDB has generated so far (= max window index seen)
  const bool start_at_zero = rng() % 8 != 0;  // as TableBuilder does; sometimes skipped
  for (size_t b = 0; b < blocks; b++) {
    if (b > 0 || start_at_zero) {
      const uint64_t off = (b == 0) ? (rng() % 4 == 0 ? rng() % (5 * kWindow) : 0)
                                    : next_offset(rng, prev, generated);
      l.ops.push_back(Op{Op::kStart, off, std::string()});
      l.offsets.push_back(off);
      prev = off;
      if (off / kWindow > generated) generated = off / kWindow;
    }
    const size_t n = keys_in_block(rng);
    for (size_t i = 0; i < n; i++) {
      std::string k = layout_key(rng, l.keys);
      l.ops.push_back(Op{Op::kKey, 0, k});
      l.keys.push_back(k);
      if (!l.offsets.empty()) l.members.emplace_back(l.offsets.back(), k);
    }
  }
  return l;
}

struct Built {
  std::string leveldb_block;
  std::string rust_block;
};

Built build_both(const Layout& l) {
  Built out;
  StockPolicy stock(l.bpk);
  harness::RustPolicy rust(l.bpk);
  EXPECT_NE(rust.get(), nullptr);
  if (rust.get() == nullptr) return out;

  leveldb::FilterBlockBuilder lb(stock.p.get());
  leveldb_bloom_filter_block_builder* rb = leveldb_bloom_filter_block_builder_create(rust.get());
  EXPECT_NE(rb, nullptr);
  if (rb == nullptr) return out;
  for (const Op& op : l.ops) {
    if (op.kind == Op::kStart) {
      lb.StartBlock(op.offset);
      const int st = leveldb_bloom_filter_block_builder_start_block(rb, op.offset);
      EXPECT_EQ(st, LEVELDB_BLOOM_OK) << "start_block(" << op.offset
                                      << "): " << leveldb_bloom_status_message(st);
    } else {
      lb.AddKey(leveldb::Slice(op.key));
      const int st = leveldb_bloom_filter_block_builder_add_key(rb, op.key.data(), op.key.size());
      EXPECT_EQ(st, LEVELDB_BLOOM_OK) << "add_key: " << leveldb_bloom_status_message(st);
    }
  }
  out.leveldb_block = lb.Finish().ToString();
  const uint8_t* block = nullptr;
  size_t block_len = 0;
  const int st = leveldb_bloom_filter_block_builder_finish(rb, &block, &block_len);
  EXPECT_EQ(st, LEVELDB_BLOOM_OK) << "finish: " << leveldb_bloom_status_message(st);
  if (st == LEVELDB_BLOOM_OK && (block != nullptr || block_len == 0)) {
    out.rust_block.assign(reinterpret_cast<const char*>(block), block_len);
  }
  leveldb_bloom_filter_block_builder_destroy(rb);
  return out;
}

std::string describe_layout(const Layout& l) {
  std::string s = "bpk=" + std::to_string(l.bpk) + " ops:";
  size_t shown = 0;
  for (const Op& op : l.ops) {
    if (++shown > 60) {
      s += " ...";
      break;
    }
    if (op.kind == Op::kStart) {
      s += " start(" + std::to_string(op.offset) + ")";
    } else {
      s += " key(" + harness::to_hex(op.key) + ")";
    }
  }
  return s;
}

// Offsets worth querying a block with: every offset used, neighbours of window edges,
// random small offsets and huge ones.
std::vector<uint64_t> query_offsets(std::mt19937_64& rng, const std::vector<uint64_t>& used,
                                    size_t num_filters) {
  std::vector<uint64_t> offs(used.begin(), used.end());
  const uint64_t span = (num_filters + 3) * kWindow;
  for (int i = 0; i < 12; i++) offs.push_back(rng() % span);
  for (uint64_t w : {uint64_t{0}, uint64_t{1}, static_cast<uint64_t>(num_filters),
                     static_cast<uint64_t>(num_filters) + 1}) {
    offs.push_back(w * kWindow);
    if (w > 0) offs.push_back(w * kWindow - 1);
  }
  offs.push_back(UINT64_MAX);
  offs.push_back(uint64_t{1} << 63);
  offs.push_back(uint64_t{1} << 43);   // index 2^32: past any u32-truncated index
  offs.push_back((uint64_t{1} << 43) + kWindow);
  offs.push_back(rng());
  offs.push_back(rng() >> (rng() % 64));
  return offs;
}

struct Counts {
  uint64_t blocks = 0;
  uint64_t block_bytes = 0;
  uint64_t queries = 0;
  uint64_t no_match = 0;  // queries LevelDB answered "no" (the rest: "may match")
};

// Queries LevelDB's reader and the Rust reader on `block`; returns the number of mismatches
// (each one reported, the first few in detail).
uint64_t compare_queries(const leveldb::FilterPolicy* stock, const leveldb_bloom_policy* rust,
                         const std::string& block, const std::vector<uint64_t>& offsets,
                         const std::vector<std::string>& keys, Counts* counts,
                         const char* what) {
  // A copy of exactly block.size() bytes, so that an overread is a real overread.
  std::unique_ptr<char[]> copy(new char[block.size() + 1]);
  std::memcpy(copy.get(), block.data(), block.size());
  const leveldb::Slice contents(copy.get(), block.size());
  leveldb::FilterBlockReader reader(stock, contents);
  uint64_t mismatches = 0;
  // Every (offset, key) pair also goes through the batch call, in one batch.
  std::vector<uint64_t> batch_offsets;
  std::vector<const char*> batch_keys;
  std::vector<size_t> batch_lens;
  for (uint64_t off : offsets) {
    for (const std::string& key : keys) {
      batch_offsets.push_back(off);
      batch_keys.push_back(key.data());
      batch_lens.push_back(key.size());
    }
  }
  std::vector<uint8_t> batch(batch_keys.size(), 0x55);
  EXPECT_EQ(leveldb_bloom_filter_block_may_match_batch(
                rust, reinterpret_cast<const uint8_t*>(copy.get()), block.size(),
                batch_offsets.data(), batch_keys.data(), batch_lens.data(), batch_keys.size(),
                batch.data()),
            LEVELDB_BLOOM_OK);
  size_t batch_index = 0;
  for (uint64_t off : offsets) {
    for (const std::string& key : keys) {
      const bool want = reader.KeyMayMatch(off, leveldb::Slice(key));
      const bool got = leveldb_bloom_filter_block_may_match(
          rust, reinterpret_cast<const uint8_t*>(copy.get()), block.size(), off, key.data(),
          key.size());
      counts->queries++;
      counts->no_match += !want;
      const uint8_t batch_answer = batch[batch_index++];
      if (batch_answer != static_cast<uint8_t>(want)) {
        if (++mismatches <= 3) {
          ADD_FAILURE() << what << ": FilterBlockReader::KeyMayMatch=" << want
                        << " but leveldb_bloom_filter_block_may_match_batch gave "
                        << int(batch_answer) << " at block_offset " << off << ", key "
                        << harness::to_hex(key);
        }
      }
      if (want != got) {
        if (++mismatches <= 3) {
          ADD_FAILURE() << what << ": FilterBlockReader::KeyMayMatch=" << want
                        << " but leveldb_bloom_filter_block_may_match=" << got
                        << "\n  block (" << block.size() << " bytes) = "
                        << harness::to_hex(block.substr(0, 400))
                        << (block.size() > 400 ? "..." : "") << "\n  block_offset = " << off
                        << "\n  key = " << harness::to_hex(key);
        }
      }
    }
  }
  return mismatches;
}

// The layouts and their blocks, shared by the tests (built once per process).
struct Corpus {
  std::vector<Layout> layouts;
  std::vector<Built> built;
};

const Corpus& corpus() {
  static const Corpus* c = [] {
    auto* out = new Corpus;
    std::mt19937_64 rng(harness::seed() ^ 0xF11B10C5ull);
    const uint64_t n = harness::env_count("LEVELDB_BLOOM_FB_LAYOUTS", 10000);
    out->layouts.reserve(n);
    for (uint64_t i = 0; i < n; i++) out->layouts.push_back(random_layout(rng));
    // A few fixed layouts: LevelDB's own filter_block_test cases, plus an empty builder.
    Layout empty;
    out->layouts.push_back(empty);
    Layout single;
    for (const char* k : {"foo", "bar", "box", "box", "hello"}) {
      single.ops.push_back(Op{Op::kKey, 0, k});
      single.keys.push_back(k);
    }
    single.ops.insert(single.ops.begin(), Op{Op::kStart, 100, ""});
    single.ops.insert(single.ops.begin() + 3, Op{Op::kStart, 200, ""});
    single.ops.insert(single.ops.begin() + 5, Op{Op::kStart, 300, ""});
    single.offsets = {100, 200, 300};
    out->layouts.push_back(single);
    Layout multi;
    const std::vector<Op> mops = {
        {Op::kStart, 0, ""},    {Op::kKey, 0, "foo"},   {Op::kStart, 2000, ""},
        {Op::kKey, 0, "bar"},   {Op::kStart, 3100, ""}, {Op::kKey, 0, "box"},
        {Op::kStart, 9000, ""}, {Op::kKey, 0, "box"},   {Op::kKey, 0, "hello"}};
    multi.ops = mops;
    multi.offsets = {0, 2000, 3100, 9000};
    multi.keys = {"foo", "bar", "box", "box", "hello"};
    multi.members = {{0, "foo"}, {2000, "bar"}, {3100, "box"}, {9000, "box"}, {9000, "hello"}};
    out->layouts.push_back(multi);
    out->built.reserve(out->layouts.size());
    for (const Layout& l : out->layouts) out->built.push_back(build_both(l));
    return out;
  }();
  return *c;
}

// Every comparison below is against LevelDB's own policy, not a look-alike.
TEST(FilterBlockOracle, IsLevelDBsOwnBloomPolicy) {
  harness::expect_leveldb_is_the_oracle(harness::LevelDBLink::kStaticArchive);
}

// The declared layout is the archive's: check what its constructors wrote where.
TEST(FilterBlockLayout, DeclarationsMatchTheArchive) {
  using namespace filter_block_layout;  // NOLINT: the offsets read as the members' names
  StockPolicy stock(10);
  {
    leveldb::FilterBlockBuilder b(stock.p.get());
    const char* base = reinterpret_cast<const char*>(&b);
    EXPECT_EQ(load_at<const void*>(&b, kBuilderPolicy), static_cast<const void*>(stock.p.get()));
    // keys_ and result_ are empty strings using their in-object buffers.
    EXPECT_EQ(load_at<const char*>(&b, kBuilderKeys + kStringData),
              base + kBuilderKeys + kStringBuffer);
    EXPECT_EQ(load_at<size_t>(&b, kBuilderKeys + kStringSize), 0u);
    EXPECT_EQ(load_at<const char*>(&b, kBuilderResult + kStringData),
              base + kBuilderResult + kStringBuffer);
    EXPECT_EQ(load_at<size_t>(&b, kBuilderResult + kStringSize), 0u);
    // The three vectors are null.
    for (size_t vec : {kBuilderStart, kBuilderTmpKeys, kBuilderFilterOffsets}) {
      for (size_t off = vec; off < vec + kVector; off += kPtr) {
        EXPECT_EQ(load_at<const void*>(&b, off), nullptr) << off;
      }
    }
    b.StartBlock(0);
    b.AddKey("k1");
    b.AddKey("key2");
    // start_ holds {0, 2} and keys_ "k1key2".
    const size_t* start = load_at<const size_t*>(&b, kBuilderStart + kVectorBegin);
    ASSERT_NE(start, nullptr);
    EXPECT_EQ(load_at<const size_t*>(&b, kBuilderStart + kVectorEnd) - start, 2);
    EXPECT_EQ(start[0], 0u);
    EXPECT_EQ(start[1], 2u);
    EXPECT_EQ(std::string(load_at<const char*>(&b, kBuilderKeys + kStringData),
                          load_at<size_t>(&b, kBuilderKeys + kStringSize)),
              "k1key2");
    b.StartBlock(3 * kWindow);
    // filter_offsets_ has 3 entries now; result_ holds the first filter.
    const uint32_t* fo = load_at<const uint32_t*>(&b, kBuilderFilterOffsets + kVectorBegin);
    ASSERT_NE(fo, nullptr);
    EXPECT_EQ(load_at<const uint32_t*>(&b, kBuilderFilterOffsets + kVectorEnd) - fo, 3);
    EXPECT_GT(load_at<size_t>(&b, kBuilderResult + kStringSize), 0u);
    const leveldb::Slice block = b.Finish();
    EXPECT_EQ(block.data(), load_at<const char*>(&b, kBuilderResult + kStringData));
    EXPECT_EQ(block.size(), load_at<size_t>(&b, kBuilderResult + kStringSize));
  }
  {
    std::string block = "0123456789";  // 10 bytes, patched to a 1-filter block
    block.replace(5, 4, std::string("\x01\x00\x00\x00", 4));  // array offset 1 (LE)
    // base_lg_ = contents[n - 1] reads a char: sign-extended where char is signed (x86),
    // 251 where it is not (arm64, s390x). LevelDB shifts by it unchecked; both shift by 59
    // (the count is taken modulo 64), as FilterBlockCorrupt.EveryBaseLg checks.
    block[9] = static_cast<char>(0xfb);
    leveldb::FilterBlockReader r(stock.p.get(), leveldb::Slice(block));
    EXPECT_EQ(load_at<const void*>(&r, kReaderPolicy), static_cast<const void*>(stock.p.get()));
    EXPECT_EQ(load_at<const char*>(&r, kReaderData), block.data());
    EXPECT_EQ(load_at<const char*>(&r, kReaderOffset), block.data() + 1);
    EXPECT_EQ(load_at<size_t>(&r, kReaderNum), 1u);  // (10 - 5 - 1) / 4
    EXPECT_EQ(load_at<size_t>(&r, kReaderBaseLg), static_cast<size_t>(block[9]));
  }
}

// (a) Random layouts: LevelDB's builder and the Rust builder emit the same bytes.
TEST(FilterBlock, RandomLayoutsBuildIdenticalBlocks) {
  const Corpus& c = corpus();
  Counts counts;
  uint64_t mismatches = 0;
  size_t max_len = 0;
  for (size_t i = 0; i < c.layouts.size(); i++) {
    const Built& b = c.built[i];
    counts.blocks++;
    counts.block_bytes += b.leveldb_block.size();
    if (b.leveldb_block.size() > max_len) max_len = b.leveldb_block.size();
    if (b.leveldb_block != b.rust_block) {
      if (++mismatches <= 3) {
        size_t first = 0;
        while (first < b.leveldb_block.size() && first < b.rust_block.size() &&
               b.leveldb_block[first] == b.rust_block[first]) {
          first++;
        }
        ADD_FAILURE() << "layout " << i << ": blocks differ (LevelDB " << b.leveldb_block.size()
                      << " bytes, Rust " << b.rust_block.size() << " bytes, first difference at "
                      << first << ")\n  " << describe_layout(c.layouts[i]);
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  std::printf("[filter_block] compared %llu blocks byte for byte (%llu bytes, largest %zu)\n",
              static_cast<unsigned long long>(counts.blocks),
              static_cast<unsigned long long>(counts.block_bytes), max_len);
}

// (b) Queries on well-formed blocks: every offset used plus random and huge ones; keys added
// anywhere in the block plus absent keys.
TEST(FilterBlock, QueriesOnBuiltBlocksAgree) {
  const Corpus& c = corpus();
  std::mt19937_64 rng(harness::seed() ^ 0x0E5100ull);
  Counts counts;
  uint64_t mismatches = 0;
  uint64_t negatives = 0;
  for (size_t i = 0; i < c.layouts.size(); i++) {
    const Layout& l = c.layouts[i];
    const std::string& block = c.built[i].leveldb_block;
    StockPolicy stock(l.bpk);
    harness::RustPolicy rust(l.bpk);
    ASSERT_NE(rust.get(), nullptr);
    // Members must match at their own offset, in both readers.
    {
      leveldb::FilterBlockReader reader(stock.p.get(), leveldb::Slice(block));
      for (const auto& m : l.members) {
        EXPECT_TRUE(reader.KeyMayMatch(m.first, m.second));
        EXPECT_TRUE(leveldb_bloom_filter_block_may_match(
            rust.get(), reinterpret_cast<const uint8_t*>(block.data()), block.size(), m.first,
            m.second.data(), m.second.size()))
            << "layout " << i << ": key " << harness::to_hex(m.second) << " added at offset "
            << m.first << " does not match";
      }
    }
    const size_t num_filters = block.size() >= 5 ? (block.size() - 5) / 4 : 0;  // upper bound
    std::vector<uint64_t> offsets = query_offsets(rng, l.offsets, num_filters);
    // Keys: a sample of the added keys (all of them if few) plus absent keys.
    std::vector<std::string> keys;
    if (l.keys.size() <= 64) {
      keys = l.keys;
    } else {
      for (int j = 0; j < 64; j++) keys.push_back(l.keys[rng() % l.keys.size()]);
    }
    for (int j = 0; j < 24; j++) keys.push_back(harness::random_key(rng, 24));
    keys.push_back(std::string());
    mismatches += compare_queries(stock.p.get(), rust.get(), block, offsets, keys, &counts,
                                  "built block");
    // How many queries LevelDB answered "no": proof that the blocks are not all-match.
    leveldb::FilterBlockReader reader(stock.p.get(), leveldb::Slice(block));
    for (const std::string& k : keys) negatives += !reader.KeyMayMatch(offsets[0], k);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(negatives, 0u);
  std::printf("[filter_block] compared %llu queries on %zu built blocks (%llu answered no by"
              " LevelDB, %llu mismatches)\n",
              static_cast<unsigned long long>(counts.queries), c.layouts.size(),
              static_cast<unsigned long long>(counts.no_match),
              static_cast<unsigned long long>(mismatches));
}

// Small offsets and a few keys that exercise malformed blocks well.
std::vector<uint64_t> corrupt_offsets(std::mt19937_64& rng) {
  std::vector<uint64_t> offs = {0, 1, 2047, 2048, 4095, 4096, 6144, 10000, 1 << 16,
                                UINT64_MAX, uint64_t{1} << 63, uint64_t{1} << 43};
  for (int s = 0; s < 64; s += 5) offs.push_back((uint64_t{1} << s) + (rng() % 3));
  for (int i = 0; i < 4; i++) offs.push_back(rng() % (64 * kWindow));
  offs.push_back(rng());
  return offs;
}

std::vector<std::string> corrupt_keys(std::mt19937_64& rng, const Layout& l) {
  std::vector<std::string> keys = {std::string(), "foo", "hello"};
  for (int i = 0; i < 3 && !l.keys.empty(); i++) keys.push_back(l.keys[rng() % l.keys.size()]);
  for (int i = 0; i < 3; i++) keys.push_back(harness::random_key(rng, 16));
  return keys;
}

// The corruption tests: every query of each damaged block asked of LevelDB's reader and of
// ours, which must agree; TearDown checks and reports.
class FilterBlockCorrupt : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(rust.get(), nullptr); }

  // Asks both readers about `keys` at `offs` in `block`; one more block compared.
  void Compare(const std::string& block, const std::vector<uint64_t>& offs,
               const std::vector<std::string>& keys, const char* what) {
    mismatches += compare_queries(stock.p.get(), rust.get(), block, offs, keys, &counts, what);
    counts.blocks++;
  }

  void TearDown() override {
    EXPECT_EQ(mismatches, 0u);
    EXPECT_GT(counts.no_match, 0u);  // not a vacuous comparison
    std::printf("[filter_block] %s: %llu blocks%s, %llu queries (%llu answered no)\n",
                what.c_str(), static_cast<unsigned long long>(counts.blocks), note.c_str(),
                static_cast<unsigned long long>(counts.queries),
                static_cast<unsigned long long>(counts.no_match));
  }

  // Calls `damage` with up to `most` of the corpus's real blocks whose size is in
  // [min_size, max_size], each with the queries to ask of it; notes how many.
  // `most` is scaled by LEVELDB_BLOOM_FB_CORRUPT_BLOCKS (default 300: `most` as written), for
  // the emulated and valgrind runs, where every comparison costs tens of times more.
  void ForRealBlocks(size_t most, size_t min_size, size_t max_size, std::mt19937_64& rng,
                     const std::function<void(const std::string& block, const Layout& layout,
                                              std::vector<uint64_t>* offs,
                                              const std::vector<std::string>& keys)>& damage) {
    const Corpus& c = corpus();
    most = static_cast<size_t>(most * harness::env_count("LEVELDB_BLOOM_FB_CORRUPT_BLOCKS", 300) / 300);
    size_t used = 0;
    for (size_t i = 0; i < c.layouts.size() && used < most; i++) {
      const std::string& block = c.built[i].leveldb_block;
      if (block.size() < min_size || block.size() > max_size) continue;
      used++;
      std::vector<uint64_t> offs = corrupt_offsets(rng);
      const std::vector<std::string> keys = corrupt_keys(rng, c.layouts[i]);
      damage(block, c.layouts[i], &offs, keys);
    }
    note = " from " + std::to_string(used) + " real blocks";
  }

  StockPolicy stock{10};
  harness::RustPolicy rust{10};
  Counts counts;
  uint64_t mismatches = 0;
  std::string what, note;  // the report's name, and what it adds after the block count
};

// (c1) Every truncation of real blocks.
TEST_F(FilterBlockCorrupt, EveryTruncation) {
  std::mt19937_64 rng(harness::seed() ^ 0x7A0CA7Eull);
  // At most 3000 bytes: the cost is quadratic in the size.
  ForRealBlocks(300, 0, 3000, rng, [&](const std::string& block, const Layout&,
                                        std::vector<uint64_t>* offs,
                                        const std::vector<std::string>& keys) {
    for (size_t len = 0; len <= block.size(); len++) {
      // Truncate at the end (what a short read gives) and at the front.
      Compare(block.substr(0, len), *offs, keys, "truncated block");
      if (len % 3 == 0) Compare(block.substr(block.size() - len), *offs, keys, "front-truncated block");
    }
  });
  what = "truncations";
}

// (c2) Random byte flips, mostly in the offset array, the array-offset word and base_lg.
TEST_F(FilterBlockCorrupt, RandomByteFlips) {
  const Corpus& c = corpus();
  std::mt19937_64 rng(harness::seed() ^ 0xF11Dull);
  for (size_t i = 0; i < c.layouts.size(); i++) {
    const std::string& block = c.built[i].leveldb_block;
    if (block.size() < 5) continue;
    const uint32_t array_offset = get_le32(block.data() + block.size() - 5);
    const std::vector<uint64_t> offs = corrupt_offsets(rng);
    const std::vector<std::string> keys = corrupt_keys(rng, c.layouts[i]);
    for (int trial = 0; trial < 12; trial++) {
      std::string b = block;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; f++) {
        size_t pos;
        switch (rng() % 4) {
          case 0: pos = rng() % b.size(); break;                                 // anywhere
          case 1: pos = b.size() - 5 + rng() % 4; break;                         // array offset
          case 2: pos = b.size() - 1; break;                                     // base_lg
          default: pos = array_offset + rng() % (b.size() - array_offset); break;  // offsets
        }
        uint8_t x;
        switch (rng() % 3) {
          case 0: x = static_cast<uint8_t>(1u << (rng() % 8)); break;
          default: x = static_cast<uint8_t>(1 + rng() % 255); break;
        }
        b[pos] = static_cast<char>(static_cast<uint8_t>(b[pos]) ^ x);
      }
      // Sometimes a plausible array offset, so that the damaged array is actually read.
      if (rng() % 4 == 0) {
        const uint32_t ao = static_cast<uint32_t>(rng() % (b.size() - 4));
        put_le32(&b[b.size() - 5], ao);
      }
      Compare(b, offs, keys, "block with flipped bytes");
    }
  }
  what = "byte flips";
}

// (c3) All 256 values of the last byte (base_lg) of real blocks: LevelDB shifts the block
// offset by it unchecked (a size_t assigned from a possibly negative char).
TEST_F(FilterBlockCorrupt, EveryBaseLg) {
  std::mt19937_64 rng(harness::seed() ^ 0xBA5E16ull);
  // At least 9 bytes: at least one filter.
  ForRealBlocks(150, 9, SIZE_MAX, rng, [&](const std::string& block, const Layout& layout,
                                            std::vector<uint64_t>* offs,
                                            const std::vector<std::string>& keys) {
    // Offsets whose index differs for every shift count.
    for (int s = 0; s < 64; s++) offs->push_back(uint64_t{1} << s);
    for (int s = 0; s < 64; s++) offs->push_back(uint64_t{3} << s >> 1);
    for (const auto& m : layout.members) {
      offs->push_back(m.first);
      if (offs->size() > 200) break;
    }
    for (int v = 0; v < 256; v++) {
      std::string b = block;
      b[b.size() - 1] = static_cast<char>(v);
      Compare(b, *offs, keys, "block with base_lg changed");
    }
  });
  what = "base_lg 0..255";
}

// (c4) Random short blocks (0..64 bytes), half of them with a plausible trailer so that the
// offset array and the filters are actually decoded.
TEST_F(FilterBlockCorrupt, RandomShortBlocks) {
  std::mt19937_64 rng(harness::seed() ^ 0x5407ull);
  const uint64_t n = harness::env_count("LEVELDB_BLOOM_FB_RANDOM_BLOCKS", 1000000);
  uint64_t decoded = 0;  // blocks whose trailer LevelDB accepts
  Layout none;
  for (uint64_t t = 0; t < n; t++) {
    const size_t len = static_cast<size_t>(rng() % 65);
    std::string b(len, '\0');
    for (char& ch : b) ch = static_cast<char>(rng() & 0xff);
    if (len >= 5 && rng() % 2 == 0) {
      const uint32_t ao = static_cast<uint32_t>(rng() % (len - 4));
      put_le32(&b[len - 5], ao);
      if (rng() % 2 == 0) b[len - 1] = static_cast<char>(rng() % 16);  // small base_lg
      // Offset entries that mostly point inside the filter area.
      for (size_t p = ao; p + 4 <= len - 5; p += 4) {
        if (rng() % 4 != 0) {
          const uint32_t e = static_cast<uint32_t>(rng() % (ao + 2));
          put_le32(&b[p], e);
        }
      }
      // A small probe count byte at the end of some filters makes real probes run.
      if (ao >= 2 && rng() % 2 == 0) b[ao - 1] = static_cast<char>(1 + rng() % 8);
    }
    if (len >= 5) {
      const uint32_t ao = get_le32(b.data() + len - 5);
      decoded += ao <= len - 5;
    }
    std::vector<uint64_t> offs = {0, 1, 2048, 4096, 8192, 1u << 20, UINT64_MAX, rng(),
                                  rng() % 16, rng() % (16 * kWindow)};
    std::vector<std::string> keys = {std::string(), "foo", harness::random_key(rng, 12),
                                     harness::random_key(rng, 12)};
    Compare(b, offs, keys, "random short block");
  }
  what = "random short blocks";
  note = " (" + std::to_string(decoded) + " with a valid array offset)";
}

// (d) The Rust builder's misuse errors, where LevelDB asserts.
TEST(FilterBlockBuilderApi, OffsetBackwardsAlreadyFinishedAndFinishTwice) {
  harness::RustPolicy rust(10);
  ASSERT_NE(rust.get(), nullptr);
  leveldb_bloom_filter_block_builder* b = leveldb_bloom_filter_block_builder_create(rust.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 0), LEVELDB_BLOOM_OK);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_add_key(b, "foo", 3), LEVELDB_BLOOM_OK);
  // Windows 0 and 1 are generated: any offset below 2 * 2048 goes backwards.
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 5000), LEVELDB_BLOOM_OK);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 2 * kWindow - 1),
            LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 0),
            LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS);
  // Back within the open window is allowed (LevelDB allows it too).
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 2 * kWindow), LEVELDB_BLOOM_OK);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_add_key(b, "bar", 3), LEVELDB_BLOOM_OK);
  // A refused call changed nothing: the block equals LevelDB's for the accepted calls.
  StockPolicy stock(10);
  leveldb::FilterBlockBuilder lb(stock.p.get());
  lb.StartBlock(0);
  lb.AddKey("foo");
  lb.StartBlock(5000);
  lb.StartBlock(2 * kWindow);
  lb.AddKey("bar");
  const std::string want = lb.Finish().ToString();

  const uint8_t* first = nullptr;
  size_t first_len = 0;
  ASSERT_EQ(leveldb_bloom_filter_block_builder_finish(b, &first, &first_len), LEVELDB_BLOOM_OK);
  ASSERT_NE(first, nullptr);
  const std::string got(reinterpret_cast<const char*>(first), first_len);
  EXPECT_EQ(harness::to_hex(got), harness::to_hex(want));

  EXPECT_EQ(leveldb_bloom_filter_block_builder_add_key(b, "baz", 3),
            LEVELDB_BLOOM_ERR_ALREADY_FINISHED);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 1 << 20),
            LEVELDB_BLOOM_ERR_ALREADY_FINISHED);
  EXPECT_EQ(leveldb_bloom_filter_block_builder_start_block(b, 0),
            LEVELDB_BLOOM_ERR_ALREADY_FINISHED);

  const uint8_t* second = nullptr;
  size_t second_len = 0;
  ASSERT_EQ(leveldb_bloom_filter_block_builder_finish(b, &second, &second_len), LEVELDB_BLOOM_OK);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(second), second_len), got);
  // The first pointer is still valid (owned by the builder until destroy).
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(first), first_len), got);
  leveldb_bloom_filter_block_builder_destroy(b);

  // An empty builder: LevelDB's 00 00 00 00 0b.
  leveldb_bloom_filter_block_builder* e = leveldb_bloom_filter_block_builder_create(rust.get());
  ASSERT_NE(e, nullptr);
  const uint8_t* eb = nullptr;
  size_t eb_len = 0;
  ASSERT_EQ(leveldb_bloom_filter_block_builder_finish(e, &eb, &eb_len), LEVELDB_BLOOM_OK);
  leveldb::FilterBlockBuilder le(stock.p.get());
  EXPECT_EQ(harness::to_hex(std::string(reinterpret_cast<const char*>(eb), eb_len)),
            harness::to_hex(le.Finish().ToString()));
  leveldb_bloom_filter_block_builder_destroy(e);
  leveldb_bloom_filter_block_builder_destroy(nullptr);  // no-op
}

// The boundary of OFFSET_BACKWARDS is exactly where LevelDB's assertion fires (Debian's
// archive is built with assertions on): a death test runs LevelDB's builder in a child.
TEST(FilterBlockBuilderApi, BackwardsBoundaryIsLevelDBsAssertion) {
  // Re-executed children by default; GTEST_DEATH_TEST_STYLE=fast (scripts/cross: an
  // emulated binary cannot re-execute itself) forks them instead.
  if (std::getenv("GTEST_DEATH_TEST_STYLE") == nullptr) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  StockPolicy stock(10);
  harness::RustPolicy rust(10);
  ASSERT_NE(rust.get(), nullptr);
  for (uint64_t first : {uint64_t{2048}, uint64_t{5000}, uint64_t{9000}}) {
    const uint64_t generated = first / kWindow;
    for (uint64_t second : {uint64_t{0}, generated * kWindow - 1, generated * kWindow,
                            first - 1, first, first + 1}) {
      leveldb_bloom_filter_block_builder* b =
          leveldb_bloom_filter_block_builder_create(rust.get());
      ASSERT_NE(b, nullptr);
      ASSERT_EQ(leveldb_bloom_filter_block_builder_start_block(b, first), LEVELDB_BLOOM_OK);
      const int st = leveldb_bloom_filter_block_builder_start_block(b, second);
      leveldb_bloom_filter_block_builder_destroy(b);
      const auto leveldb_run = [&] {
        leveldb::FilterBlockBuilder lb(stock.p.get());
        lb.StartBlock(first);
        lb.StartBlock(second);
        lb.Finish();
        std::exit(0);
      };
      if (second / kWindow < generated) {
        EXPECT_EQ(st, LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS) << first << " then " << second;
        // (No parentheses: googletest's simple regular expressions on Windows take none.)
        EXPECT_DEATH(leveldb_run(), "filter_index >= filter_offsets_.size")
            << first << " then " << second;
      } else {
        EXPECT_EQ(st, LEVELDB_BLOOM_OK) << first << " then " << second;
        EXPECT_EXIT(leveldb_run(), testing::ExitedWithCode(0), "") << first << " then " << second;
      }
    }
  }
}

}  // namespace
