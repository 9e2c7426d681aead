// Writes the seed corpus of every fuzz target (cpp_tests/fuzz/corpus/<target>/seed-*): real filters and
// filter blocks built by LevelDB 1.23 itself from small key sets, malformed ones, and call
// sequences, each encoded in its target's input format (see the comment at the top of each
// cpp_tests/fuzz/targets/*.cc). Run by `scripts/fuzz --seeds`; the output is checked in.
//
// Build: g++ -std=c++17 -Iinclude -Icpp_tests/fuzz -Icpp_tests/support cpp_tests/fuzz/tools/make_seeds.cc libleveldb.a -lsnappy -lpthread
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common.h"

namespace {

std::string g_root;

void mkdirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); i++) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty()) mkdir(cur.c_str(), 0755);
    }
    if (i < path.size()) cur += path[i];
  }
}

void write_seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = g_root + "/" + target;
  mkdirs(dir);
  std::ofstream(dir + "/seed-" + name, std::ios::binary) << bytes;
}

// ----- encoding helpers (the inverse of fuzz::Input) -----
std::string u8(uint8_t v) { return std::string(1, static_cast<char>(v)); }
std::string u32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; i++) s += static_cast<char>(v >> (8 * i));
  return s;
}
std::string u64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; i++) s += static_cast<char>(v >> (8 * i));
  return s;
}
std::string varint(uint64_t v) {
  std::string s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    s += static_cast<char>(b);
  } while (v != 0);
  return s;
}
std::string lp(const std::string& b) { return varint(b.size()) + b; }

std::vector<std::string> words(std::initializer_list<const char*> l) {
  std::vector<std::string> v;
  for (const char* s : l) v.emplace_back(s);
  return v;
}
std::vector<std::string> le_keys(uint32_t n, uint32_t base = 0) {
  std::vector<std::string> v;
  for (uint32_t i = 0; i < n; i++) v.push_back(u32(base + i));
  return v;
}
std::vector<std::string> fmt_keys(const char* fmt, int n) {
  std::vector<std::string> v;
  char buf[64];
  for (int i = 0; i < n; i++) {
    std::snprintf(buf, sizeof buf, fmt, i);
    v.emplace_back(buf);
  }
  return v;
}

std::string leveldb_filter(int bpk, const std::vector<std::string>& keys) {
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  std::string dst;
  fuzz::leveldb_policy(bpk)->CreateFilter(slices.data(), static_cast<int>(slices.size()), &dst);
  return dst;
}

// ----- query_filter: flags | lp filter | lp keys -----
void query_filter_seeds() {
  int n = 0;
  auto seed = [&](uint8_t flags, const std::string& filter, const std::vector<std::string>& keys) {
    std::string s = u8(flags) + lp(filter);
    for (const std::string& k : keys) s += lp(k);
    write_seed("query_filter", std::to_string(n++), s);
  };
  const auto hw = words({"hello", "world"});
  const auto probes = words({"hello", "world", "x", "", "hello world", "\xff\x80", "abcd"});
  for (int bpk : {0, 1, 2, 10, 16, 44}) seed(bpk, leveldb_filter(bpk, hw), probes);
  seed(10, leveldb_filter(10, {}), probes);
  seed(10, leveldb_filter(10, std::vector<std::string>(7, "hello")), probes);
  {
    auto keys = le_keys(100);
    auto q = le_keys(40, 95);  // 5 members, 35 non-members
    seed(10, leveldb_filter(10, keys), q);
    seed(0x80 | 10, leveldb_filter(20, keys), q);
  }
  {
    auto keys = fmt_keys("key%09d", 50);
    auto q = fmt_keys("key%09d", 80);
    seed(10, leveldb_filter(10, keys), q);
  }
  // Malformed filters: every short length, k bytes 0, 30, 31, 255, odd arrays.
  seed(10, "", probes);
  seed(10 | 0x40, "\x06", probes);
  seed(10, std::string("\x00\x00", 2), probes);
  seed(10, std::string("\xff\x00", 2), probes);
  seed(10, std::string(8, '\xff') + "\x1e", probes);
  seed(10, std::string(8, '\xff') + "\x1f", probes);
  seed(10, std::string(8, '\x00') + "\xff", probes);
  seed(10, std::string(8, '\x00') + "\x06", probes);
  seed(10, std::string(3, '\x5a') + "\x01", probes);
  seed(10 | 0x40, std::string(1, '\x01') + "\x02", probes);
  seed(10, std::string(333, '\xa5') + "\x0b", le_keys(64));
  std::string f = leveldb_filter(10, hw);
  f.back() = 31;
  seed(10, f, probes);
  f.back() = 0;
  seed(10 | 0x80, f, probes);
}

// ----- query_filter_block: flags | lp block | (varint offset, lp key)* -----
struct Layout {
  int bpk;
  std::vector<std::pair<uint64_t, std::vector<std::string>>> blocks;  // start offset, keys
};

std::string leveldb_block(const Layout& l) {
  leveldb::FilterBlockBuilder b(fuzz::leveldb_policy(l.bpk));
  for (const auto& blk : l.blocks) {
    b.StartBlock(blk.first);
    for (const std::string& k : blk.second) b.AddKey(leveldb::Slice(k));
  }
  return b.Finish().ToString();
}

std::vector<Layout> layouts() {
  std::vector<Layout> v;
  v.push_back(Layout{10, {}});
  v.push_back(Layout{10, {{0, words({"foo", "bar", "box"})}, {2000, words({"box"})},
                          {3100, words({"hello"})}}});
  // LevelDB's filter_block_test MultiChunk.
  v.push_back(Layout{10, {{0, words({"foo"})}, {2000, words({"bar"})}, {3100, words({"box"})},
                          {9000, words({"box", "hello"})}}});
  v.push_back(Layout{16, {{0, le_keys(30)}, {4000, le_keys(30, 30)}, {8500, le_keys(30, 60)}}});
  v.push_back(Layout{0, {{0, words({"a"})}, {100000, words({"b"})}}});
  v.push_back(Layout{1, {{0, {}}, {2048, words({""})}, {6000, {}}, {6100, words({"z"})}}});
  v.push_back(Layout{44, {{0, fmt_keys("user%04d", 40)}}});
  return v;
}

void query_filter_block_seeds() {
  int n = 0;
  auto seed = [&](uint8_t flags, const std::string& block,
                  const std::vector<std::pair<uint64_t, std::string>>& queries) {
    std::string s = u8(flags) + lp(block);
    for (const auto& q : queries) s += varint(q.first) + lp(q.second);
    write_seed("query_filter_block", std::to_string(n++), s);
  };
  for (const Layout& l : layouts()) {
    std::vector<std::pair<uint64_t, std::string>> q;
    for (const auto& blk : l.blocks) {
      for (const std::string& k : blk.second) {
        q.emplace_back(blk.first, k);
        q.emplace_back(blk.first + 2048, k);
      }
      q.emplace_back(blk.first, "absent");
    }
    q.emplace_back(0, "foo");
    q.emplace_back(UINT64_MAX, "foo");
    q.emplace_back(uint64_t{1} << 43, "foo");
    const std::string block = leveldb_block(l);
    seed(l.bpk, block, q);
    // Corruptions of the same block: base_lg bytes, array offset, a filter offset.
    std::string c = block;
    c.back() = 0;
    seed(l.bpk, c, q);
    c.back() = 64;
    seed(l.bpk, c, q);
    c.back() = static_cast<char>(255);
    seed(l.bpk | 0x40, c, q);
    if (block.size() >= 9) {
      c = block;
      c[c.size() - 5] ^= 1;  // array offset
      seed(l.bpk, c, q);
      c = block;
      c[c.size() - 9] = static_cast<char>(0xff);  // last filter offset
      seed(l.bpk, c, q);
    }
  }
  const std::vector<std::pair<uint64_t, std::string>> q = {{0, "foo"}, {2048, "bar"}, {1, ""}};
  seed(10, "", q);
  seed(10, std::string("\x00\x00\x00\x0b", 4), q);
  seed(10, std::string("\x00\x00\x00\x00\x0b", 5), q);
  seed(10, std::string("\x05\x00\x00\x00\x0b", 5), q);
  // Two filters where start > limit, and start == limit past the array.
  seed(10, std::string("\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0b", 13), q);
  seed(10 | 0x80, std::string("\x09\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\x0b", 13), q);
}

// ----- create_filter: mode | flags | [u64 n_big] | varint synthetic | lp keys -----
void create_filter_seeds() {
  int n = 0;
  auto seed = [&](int bpk, bool raw, uint8_t flags, uint64_t n_big, uint64_t synthetic,
                  const std::vector<std::string>& keys) {
    std::string s = raw ? u8(0x80) + u32(static_cast<uint32_t>(bpk)) : u8(static_cast<uint8_t>(bpk));
    s += u8(flags);
    if (flags & 0x10) s += u64(n_big);
    s += varint(synthetic);
    for (const std::string& k : keys) s += lp(k);
    write_seed("create_filter", std::to_string(n++), s);
  };
  const auto hw = words({"hello", "world"});
  for (int bpk : {0, 1, 2, 3, 10, 16, 20, 43, 44, 100}) seed(bpk, false, 0, 0, 0, hw);
  seed(10, false, 0, 0, 0, {});
  seed(10, false, 3, 0, 0, std::vector<std::string>(7, "hello"));
  seed(10, false, 0x08, 0, 0, words({"", "a", "ab", "abc", "abcd", "abcde", "\xff\xfe\xfd"}));
  seed(10, false, 0, 0, 100, {});
  seed(10, false, 5, 0, 1000, {});
  seed(16, false, 0, 0, 1024, hw);
  seed(10, false, 0x10, UINT64_MAX, 0, hw);
  seed(10, false, 0x10, uint64_t{1} << 58, 0, hw);
  seed(0, false, 0x10, UINT64_MAX, 0, hw);
  seed(1000, true, 0, 0, 0, hw);
  seed(100000, true, 0, 0, 10, hw);
  seed(-1, true, 0, 0, 0, hw);
  seed(INT32_MIN, true, 0, 0, 0, hw);
  seed(INT32_MAX, true, 0, 0, 0, hw);
  seed(INT32_MAX, true, 0x10, uint64_t{1} << 40, 0, {});
  seed(10, false, 0, 0, 0, fmt_keys("key%09d", 64));
  seed(10, false, 0x08, 0, 0, {std::string(300, 'x'), std::string(1, '\0')});
  // Counted policies.
  seed(10, false, 0x20, 0, 0, hw);
  seed(16, false, 0x20 | 0x08, 0, 100, words({"", "a"}));
}

// ----- filter_block_builder: setup | ops -----
struct Ops {
  std::string s;
  Ops& start_rel(uint64_t d) { s += u8(0) + varint(d); return *this; }
  Ops& start_abs(uint64_t off) { s += u8(2) + varint(off); return *this; }
  Ops& start_window(uint8_t ahead, uint64_t d) { s += u8(3 + 8 * ahead) + varint(d); return *this; }
  Ops& key(const std::string& k) { s += u8(4) + lp(k); return *this; }
  Ops& synthetic(uint8_t count) { s += u8(6) + u8(count); return *this; }
  Ops& finish() { s += u8(7); return *this; }
  Ops& misuse(uint8_t which) { s += u8(7 + 8 * 1 + 32 * which); return *this; }
  Ops& null_key() { s += u8(7 + 8 * 2); return *this; }
  Ops& open_window() { s += u8(7 + 8 * 3); return *this; }
};

void filter_block_builder_seeds() {
  int n = 0;
  auto seed = [&](uint8_t setup, const Ops& ops) {
    write_seed("filter_block_builder", std::to_string(n++), u8(setup) + ops.s);
  };
  seed(10, Ops());
  seed(10, Ops().finish());
  // LevelDB's filter_block_test SingleChunk and MultiChunk.
  seed(10, Ops().start_abs(100).key("foo").key("bar").key("box").start_abs(200).key("box")
               .start_abs(300).key("hello"));
  seed(10, Ops().start_abs(0).key("foo").start_abs(2000).key("bar").start_abs(3100).key("box")
               .start_abs(9000).key("box").key("hello"));
  // A table-like layout: blocks of about 4 KiB.
  {
    Ops o;
    o.start_abs(0);
    for (int b = 0; b < 12; b++) o.synthetic(20).start_rel(4096 + 5 + b * 37);
    seed(16, o);
  }
  seed(0, Ops().key("early").start_abs(5000).key("x").start_abs(4500).key("y").finish());
  seed(1, Ops().start_abs(5000).start_abs(2100).key("back").start_abs(4096).key("ok"));
  seed(10, Ops().start_abs(0).key("a").finish().key("late").start_abs(1 << 20).finish());
  seed(10, Ops().start_abs(0).misuse(0).misuse(1).misuse(2).misuse(3).misuse(4).misuse(5).key("k"));
  seed(10, Ops().start_abs(0).key("k").finish().misuse(1).misuse(5).misuse(2));
  seed(10 | 0x80, Ops().start_abs(0).key("a").start_window(3, 7).key("b").finish());
  seed(44, Ops().null_key().key("").open_window().key("z").start_rel(2048).null_key());
  seed(10, Ops().start_abs(uint64_t{1} << 26).key("far").start_rel(1).key("near"));
  seed(2, Ops().synthetic(255).synthetic(255).start_rel(2048).synthetic(100));
  {
    Ops o;
    for (int b = 0; b < 40; b++) o.start_rel(700).key(std::string(b % 9, static_cast<char>('a' + b)));
    seed(20, o.finish().finish());
  }
  // Counted policies.
  seed(10 | 0x40, Ops().start_abs(0).key("foo").start_abs(2000).key("bar").finish());
  seed(16 | 0x40 | 0x80, Ops().synthetic(50).start_rel(4096).synthetic(50).finish());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  query_filter_seeds();
  query_filter_block_seeds();
  create_filter_seeds();
  filter_block_builder_seeds();
  return 0;
}
