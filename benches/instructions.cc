// instructions: how many instructions one Bloom query or one key of a filter's creation
// executes, LevelDB 1.23 against leveldb-bloom (C API and the drop-in's object), and the
// compact format's query and creation through the C API at the same bits per key, counted
// by callgrind. Unlike a time, the count does not depend on what else the machine runs, so it
// shows where two implementations differ, length by length. scripts/bench instructions runs
// it under valgrind for every case and writes docs/data/instructions.txt.
//
// Usage: leveldb_bloom_instructions OP SIDE KEY_LEN
//   OP    present | absent (one query per key) | create (filters of 100 keys)
//   SIDE  leveldb | capi | dropin | compact (the C API's compact policy, on its own
//         filters of the same keys) | loop (the benchmark's own loop, with no call in it)
// Counts only between the two CALLGRIND_TOGGLE_COLLECT; prints the number of operations
// counted. Before counting it checks that every Bloom side answers and builds as LevelDB
// does, and that the compact filters hold every key.

#include <valgrind/callgrind.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "bench.h"
#include "leveldb_bloom.h"

namespace {

constexpr int kFilters = 16;
constexpr int kKeysPerFilter = 100;
constexpr int kBitsPerKey = 10;
constexpr int kCreateRounds = 20;

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: leveldb_bloom_instructions present|absent|create "
               "leveldb|capi|dropin|compact|loop KEY_LEN\n");
  std::exit(2);
}

// Key i: len pseudo-random bytes (distinct for distinct i).
std::string Key(uint64_t i, size_t len) {
  std::string k(len, '\0');
  uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
  for (size_t j = 0; j < len; j++) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    k[j] = static_cast<char>(x >> 56);
  }
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) Usage();
  const std::string op = argv[1], side = argv[2];
  const size_t len = static_cast<size_t>(std::atoi(argv[3]));
  if ((op != "present" && op != "absent" && op != "create") ||
      (side != "leveldb" && side != "capi" && side != "dropin" && side != "compact" &&
       side != "loop") ||
      len == 0) {
    Usage();
  }
  const bench::Policies p = bench::MakePolicies(kBitsPerKey, false);
  leveldb_bloom_policy* ours = leveldb_bloom_policy_create(kBitsPerKey);
  if (ours == nullptr) bench::Fail("leveldb_bloom_policy_create failed");
  leveldb_bloom_policy* compact = leveldb_bloom_policy_create_compact(kBitsPerKey);
  if (compact == nullptr) bench::Fail("leveldb_bloom_policy_create_compact failed");

  const int n = kFilters * kKeysPerFilter;
  std::vector<std::string> keys(n), absent(n);
  for (int i = 0; i < n; i++) {
    keys[i] = Key(static_cast<uint64_t>(i), len);
    absent[i] = Key(static_cast<uint64_t>(i) + (1ull << 40), len);
  }
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const std::string& k : keys) {
    ptrs.push_back(k.data());
    lens.push_back(len);
  }
  std::vector<std::string> filters(kFilters);
  for (int f = 0; f < kFilters; f++) {
    p.stock->CreateFilter(&slices[f * kKeysPerFilter], kKeysPerFilter, &filters[f]);
  }

  // The checks: every side builds LevelDB's bytes and answers as LevelDB does.
  std::vector<uint8_t> buffer(filters[0].size());
  for (int f = 0; f < kFilters; f++) {
    size_t out_len = 0;
    std::string dropin;
    p.dropin->CreateFilter(&slices[f * kKeysPerFilter], kKeysPerFilter, &dropin);
    if (leveldb_bloom_create_filter(ours, &ptrs[f * kKeysPerFilter], &lens[f * kKeysPerFilter],
                                    kKeysPerFilter, buffer.data(), buffer.size(),
                                    &out_len) != LEVELDB_BLOOM_OK ||
        std::string(reinterpret_cast<const char*>(buffer.data()), out_len) != filters[f] ||
        dropin != filters[f]) {
      bench::Fail("filter %d differs from LevelDB's", f);
    }
  }
  std::vector<std::string> compact_filters(kFilters);
  for (int f = 0; f < kFilters; f++) {
    size_t out_len = 0;
    if (leveldb_bloom_create_filter(compact, &ptrs[f * kKeysPerFilter], &lens[f * kKeysPerFilter],
                                    kKeysPerFilter, buffer.data(), buffer.size(),
                                    &out_len) != LEVELDB_BLOOM_OK ||
        out_len != filters[f].size()) {
      bench::Fail("compact filter %d: not built in LevelDB's length", f);
    }
    compact_filters[f].assign(reinterpret_cast<const char*>(buffer.data()), out_len);
  }
  for (int i = 0; i < n; i++) {
    const std::string& f = compact_filters[i / kKeysPerFilter];
    if (!leveldb_bloom_key_may_match(compact, keys[i].data(), len,
                                     reinterpret_cast<const uint8_t*>(f.data()), f.size())) {
      bench::Fail("compact filter %d misses its key %d", i / kKeysPerFilter, i);
    }
  }
  const std::vector<std::string>& queries = op == "absent" ? absent : keys;
  for (int i = 0; i < n; i++) {
    const std::string& f = filters[i / kKeysPerFilter];
    const bool want = p.stock->KeyMayMatch(queries[i], f);
    if (leveldb_bloom_key_may_match(ours, queries[i].data(), len,
                                    reinterpret_cast<const uint8_t*>(f.data()), f.size()) != want ||
        p.dropin->KeyMayMatch(queries[i], f) != want) {
      bench::Fail("query %d answered unlike LevelDB", i);
    }
  }

  // One loop per side, the side chosen outside it, so that every loop is the same but for
  // its call.
  size_t sink = 0;
  long operations = 0;
  if (op == "create") {
    std::string out;
    out.reserve(buffer.size());
    auto rounds = [&](auto create) {
      CALLGRIND_TOGGLE_COLLECT;
      for (int r = 0; r < kCreateRounds; r++) {
        for (int f = 0; f < kFilters; f++) sink += create(f * kKeysPerFilter);
      }
      CALLGRIND_TOGGLE_COLLECT;
    };
    auto object = [&](const leveldb::FilterPolicy* policy) {
      rounds([&](int first) {
        out.clear();
        policy->CreateFilter(&slices[first], kKeysPerFilter, &out);
        return out.size();
      });
    };
    if (side == "leveldb") {
      object(p.stock);
    } else if (side == "dropin") {
      object(p.dropin);
    } else if (side == "capi" || side == "compact") {
      leveldb_bloom_policy* policy = side == "capi" ? ours : compact;
      rounds([&](int first) {
        size_t out_len = 0;
        leveldb_bloom_create_filter(policy, &ptrs[first], &lens[first], kKeysPerFilter,
                                    buffer.data(), buffer.size(), &out_len);
        return out_len;
      });
    } else {
      rounds([&](int first) {
        out.clear();
        return out.size() + static_cast<size_t>(first);
      });
    }
    operations = static_cast<long>(kCreateRounds) * n;
  } else {
    auto queries_of = [&](auto query) {
      CALLGRIND_TOGGLE_COLLECT;
      for (int i = 0; i < n; i++) sink += query(queries[i], filters[i / kKeysPerFilter]);
      CALLGRIND_TOGGLE_COLLECT;
    };
    if (side == "leveldb") {
      queries_of([&](const std::string& k, const std::string& f) { return p.stock->KeyMayMatch(k, f); });
    } else if (side == "dropin") {
      queries_of([&](const std::string& k, const std::string& f) { return p.dropin->KeyMayMatch(k, f); });
    } else if (side == "capi") {
      queries_of([&](const std::string& k, const std::string& f) {
        return leveldb_bloom_key_may_match(ours, k.data(), k.size(),
                                           reinterpret_cast<const uint8_t*>(f.data()), f.size());
      });
    } else if (side == "compact") {
      CALLGRIND_TOGGLE_COLLECT;
      for (int i = 0; i < n; i++) {
        const std::string& f = compact_filters[i / kKeysPerFilter];
        sink += leveldb_bloom_key_may_match(compact, queries[i].data(), len,
                                            reinterpret_cast<const uint8_t*>(f.data()), f.size());
      }
      CALLGRIND_TOGGLE_COLLECT;
    } else {
      queries_of([&](const std::string& k, const std::string& f) { return k.size() + f.size(); });
    }
    operations = n;
  }
  leveldb_bloom_policy_destroy(ours);
  leveldb_bloom_policy_destroy(compact);
  std::printf("operations %ld (checksum %zu)\n", operations, sink);
  return 0;
}
