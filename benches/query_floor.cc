// query_floor: where the time of one Bloom query goes, LevelDB 1.23 against leveldb-bloom and
// against a model of the least any implementation of the format has to do, in one process.
//
// Sides (10 bits per key, so 6 probes; present keys, absent keys, and the two mixed at random):
//   LevelDB  KeyMayMatch of libleveldb's own policy object
//   C API    leveldb_bloom_key_may_match
//   model    the format's query with nothing around it: LevelDB's hash written inline, the
//            six probes without branches by a table of reciprocals, no argument checks, no
//            counting, no choice of format. Checked: it answers every query as LevelDB does.
//   hash     the model's hash alone
//   probes   the model's probes alone, on hashes computed beforehand
// each timed two ways:
//   independent  one call per key, as the other benchmarks measure: nothing ties one query to
//                the next, so the processor overlaps them as far as it can;
//   chained      the next key's address depends on the previous answer (through a zero the
//                compiler cannot see): the latency of one query, where the answer is data.
//                (LevelDB answers through branches, which the processor predicts, so its
//                next query need not wait for its loads.)
// Cycles are nanoseconds times the clock, measured with a chain of dependent 64-bit
// multiplications (3 cycles each on the x86-64 cores of recent years).
//
// Each time is the fastest of its passes, taken in rounds over all rows: the floor is what is
// wanted, and on a shared machine other work only adds time.
//
// Usage: leveldb_bloom_query_floor [--quick] [--reps N] [--keys N]

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

using bench::Fail;
using bench::NowNs;
using bench::Rng;

// A zero the optimizer cannot see through: chained loops add `answer & g_zero` to the next
// key's address.
volatile uintptr_t g_zero_source = 0;

// LevelDB's hash (util/hash.cc) with the Bloom seed: the same rule as src/hash.rs.
inline uint32_t Hash(const char* data, size_t n) {
  const uint32_t m = 0xc6a4a793;
  uint32_t h = 0xbc9f1d34 ^ static_cast<uint32_t>(n * m);
  const char* limit = data + n;
  while (data + 4 <= limit) {
    uint32_t w;
    std::memcpy(&w, data, 4);
    data += 4;
    h += w;
    h *= m;
    h ^= h >> 16;
  }
  switch (limit - data) {
    case 3:
      h += static_cast<uint32_t>(static_cast<uint8_t>(data[2])) << 16;
      [[fallthrough]];
    case 2:
      h += static_cast<uint32_t>(static_cast<uint8_t>(data[1])) << 8;
      [[fallthrough]];
    case 1:
      h += static_cast<uint8_t>(data[0]);
      h *= m;
      h ^= h >> 24;
      break;
  }
  return h;
}

// ceil(2^64 / (8 * bytes)): h % (8 * bytes) is the high word of (M * h mod 2^64) * 8 * bytes
// (Lemire, Kaser and Kurz 2019), as src/remainder.rs computes it.
uint64_t g_reciprocals[4096];

// The six probes of a well-formed filter of fewer than 4096 bytes whose last byte is 6.
inline bool Probes(uint32_t h, const uint8_t* filter, size_t len) {
  const size_t bytes = len - 1;
  const uint64_t m = g_reciprocals[bytes];
  const uint32_t delta = (h >> 17) | (h << 15);
  uint32_t all = 1;
  for (int j = 0; j < 6; j++) {
    const unsigned __int128 p = static_cast<unsigned __int128>(m * h) * bytes;
    all &= filter[static_cast<size_t>(p >> 64)] >> (static_cast<uint64_t>(p) >> 61);
    h += delta;
  }
  return all & 1;
}

__attribute__((noinline)) bool ModelProbes(uint32_t h, const uint8_t* filter, size_t len) {
  return Probes(h, filter, len);
}

__attribute__((noinline)) bool ModelQuery(const char* key, size_t key_len, const uint8_t* filter,
                                          size_t len) {
  return Probes(Hash(key, key_len), filter, len);
}

__attribute__((noinline)) uint32_t HashOnly(const char* key, size_t key_len) {
  return Hash(key, key_len);
}

// Which keys a row asks: all stored in their filters, none, or each one a coin toss (so that
// nothing about the answer can be predicted).
enum Kind { kPresent, kAbsent, kMixed };
const char* const kKindName[] = {"present", "absent", "mixed"};

enum Side { kLevelDB, kCApi, kModel, kHash, kProbes, kSides };
const char* const kSideName[kSides] = {"LevelDB", "C API", "model", "hash", "probes"};

struct Queries {
  int key_len = 0;
  std::vector<char> keys;             // contiguous, in query order
  std::vector<const char*> filters;   // the filter each key is asked of
  std::vector<size_t> filter_lens;
  std::vector<uint32_t> hashes;       // for the probes-alone side
};

// Nanoseconds per query over all of `q`, one pass, independent or chained.
double TimePass(Side side, const Queries& q, bool chained, const bench::Policies& p,
                const leveldb_bloom_policy* ours) {
  const size_t n = q.filters.size();
  const uintptr_t zero = g_zero_source;
  uintptr_t carry = 0;
  uint64_t sum = 0;
  const uint64_t start = NowNs();
  for (size_t i = 0; i < n; i++) {
    const char* key = q.keys.data() + i * q.key_len + (chained ? (carry & zero) : 0);
    const auto* filter = reinterpret_cast<const uint8_t*>(q.filters[i]);
    uintptr_t answer = 0;
    switch (side) {
      case kLevelDB:
        answer = p.stock->KeyMayMatch(leveldb::Slice(key, q.key_len),
                                      leveldb::Slice(q.filters[i], q.filter_lens[i]));
        break;
      case kCApi:
        answer = leveldb_bloom_key_may_match(ours, key, q.key_len, filter, q.filter_lens[i]);
        break;
      case kModel:
        answer = ModelQuery(key, q.key_len, filter, q.filter_lens[i]);
        break;
      case kHash:
        answer = HashOnly(key, q.key_len);
        break;
      case kProbes:
        answer = ModelProbes(q.hashes[i] + static_cast<uint32_t>(chained ? (carry & zero) : 0),
                             filter, q.filter_lens[i]);
        break;
      case kSides:
        break;
    }
    carry = answer;
    sum += answer;
  }
  const uint64_t elapsed = NowNs() - start;
  bench::g_sink = bench::g_sink + sum;
  return static_cast<double>(elapsed) / static_cast<double>(n);
}

double ClockGhz() {
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    uint64_t x = 3;
    const long n = 20000000;
    const uint64_t start = NowNs();
    for (long i = 0; i < n; i++) __asm__ volatile("imul %0, %0" : "+r"(x));
    const double ns = static_cast<double>(NowNs() - start) / n;
    bench::g_sink = bench::g_sink + x;
    if (ns < best) best = ns;
  }
  return 3.0 / best;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 21;
  size_t keys_total = 100000;
  std::vector<int> key_lens{8, 16, 24, 64};
  std::vector<int> kpfs{100, 1000};
  std::string csv_path;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--quick") {
      reps = 1;
      keys_total = 2000;
      key_lens = {16};
      kpfs = {100};
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--keys" && i + 1 < argc) {
      keys_total = std::max<size_t>(1000, std::strtoull(argv[++i], nullptr, 10));
    } else if (a == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: leveldb_bloom_query_floor [--quick] [--reps N] [--keys N] [--csv FILE]\n");
      return 2;
    }
  }
  for (size_t bytes = 1; bytes < 4096; bytes++)
    g_reciprocals[bytes] = UINT64_MAX / (8 * bytes) + 1;

  bench::PrintMachine(
      "leveldb_bloom_query_floor: one Bloom query, LevelDB 1.23 vs leveldb-bloom vs a model of "
      "the format's least work");
  const bench::Policies policies = bench::MakePolicies(10, true);
  leveldb_bloom_policy* ours = leveldb_bloom_policy_create(10);
  if (ours == nullptr) Fail("leveldb_bloom_policy_create(10) failed");
  const double ghz = ClockGhz();
  std::printf(
      "method: %zu keys per row (pseudo-random bytes) in filters of N keys, 10 bits per key;\n"
      "  each key once, in random order, against the filter holding it (present), as many\n"
      "  other keys (absent), or each query either at random (mixed). The fastest of %d passes per side (a floor: other work on the\n"
      "  machine only adds time), in rounds over all rows, sides rotated. Cycles = ns x %.2f GHz\n"
      "  (the clock, from dependent 64-bit multiplications, 3 cycles each). Checked: the model\n"
      "  and the C API answer every query as LevelDB does.\n\n",
      keys_total, reps, ghz);
  std::printf(
      " key  keys/           | independent queries: ns (cycles)                           "
      "| chained: the next key waits for this answer, ns (cycles)   | LevelDB /\n");
  std::printf(" len filter  keys     |");
  for (int chained = 0; chained < 2; chained++) {
    for (int s = 0; s < kSides; s++) std::printf(" %11s", kSideName[s]);
    std::printf(" |");
  }
  std::printf(" C API  model\n");

  // Every row's queries are made first; then each round times every row once, so that a
  // row's passes are spread over the whole run and a burst of other work on the machine
  // spoils a few passes of many rows rather than all passes of one.
  struct Row {
    int key_len, kpf;
    Kind kind;
    Queries q;
    double best[2][kSides];
  };
  std::vector<Row> rows;
  std::vector<std::vector<std::string>> all_filters;
  Rng rng(20261125);
  for (int key_len : key_lens) {
    for (int kpf : kpfs) {
      const size_t filters = keys_total / kpf, n = filters * kpf;
      std::vector<char> stored(n * key_len), absent(n * key_len);
      rng.Fill(stored.data(), stored.size());
      rng.Fill(absent.data(), absent.size());
      all_filters.emplace_back(filters);
      std::vector<std::string>& built = all_filters.back();
      for (size_t f = 0; f < filters; f++) {
        std::vector<leveldb::Slice> slices;
        for (int i = 0; i < kpf; i++)
          slices.emplace_back(&stored[(f * kpf + i) * key_len], key_len);
        policies.stock->CreateFilter(slices.data(), kpf, &built[f]);
        if (built[f].size() >= 4096 || built[f].back() != 6) Fail("unexpected filter shape");
      }
      for (Kind kind : {kPresent, kAbsent, kMixed}) {
        rows.push_back(Row{key_len, kpf, kind, {}, {}});
        Queries& q = rows.back().q;
        q.key_len = key_len;
        std::vector<uint32_t> order(n);
        for (size_t i = 0; i < n; i++) order[i] = static_cast<uint32_t>(i);
        bench::Shuffle(order.data(), n, rng);
        q.keys.resize(n * key_len);
        for (size_t i = 0; i < n; i++) {
          const bool from_stored = kind == kPresent || (kind == kMixed && (rng.Next() & 1));
          const std::vector<char>& source = from_stored ? stored : absent;
          std::memcpy(&q.keys[i * key_len], &source[order[i] * key_len], key_len);
          const std::string& filter = built[order[i] / kpf];
          q.filters.push_back(filter.data());
          q.filter_lens.push_back(filter.size());
          q.hashes.push_back(Hash(&q.keys[i * key_len], key_len));
        }
        for (size_t i = 0; i < n; i++) {
          const char* key = &q.keys[i * key_len];
          const auto* filter = reinterpret_cast<const uint8_t*>(q.filters[i]);
          const bool want = policies.stock->KeyMayMatch(
              leveldb::Slice(key, key_len), leveldb::Slice(q.filters[i], q.filter_lens[i]));
          if (kind == kPresent && !want) Fail("LevelDB lost a present key");
          if (ModelQuery(key, key_len, filter, q.filter_lens[i]) != want ||
              ModelProbes(q.hashes[i], filter, q.filter_lens[i]) != want)
            Fail("the model answers query %zu unlike LevelDB", i);
          if (leveldb_bloom_key_may_match(ours, key, key_len, filter, q.filter_lens[i]) != want)
            Fail("the C API answers query %zu unlike LevelDB", i);
        }
      }
    }
  }
  for (Row& row : rows)
    for (auto& mode : row.best)
      for (double& t : mode) t = 1e30;
  for (int rep = 0; rep < reps; rep++) {
    for (Row& row : rows) {
      for (int chained = 0; chained < 2; chained++) {
        for (int k = 0; k < kSides; k++) {
          const Side side = static_cast<Side>((k + rep) % kSides);
          const double t = TimePass(side, row.q, chained, policies, ours);
          row.best[chained][side] = std::min(row.best[chained][side], t);
        }
      }
    }
  }
  // One CSV row per table row: ns per query of each side, independent then chained.
  FILE* csv = bench::OpenCsv(csv_path, [](FILE* f) {
    std::fprintf(f, "key_len,keys_per_filter,keys");
    for (const char* how : {"independent", "chained"}) {
      for (const char* side : {"leveldb", "capi", "model", "hash", "probes"}) {
        std::fprintf(f, ",%s_%s_ns", how, side);
      }
    }
    std::fprintf(f, ",ghz\n");
  });
  for (const Row& row : rows) {
    if (csv != nullptr) {
      std::fprintf(csv, "%d,%d,%s", row.key_len, row.kpf, kKindName[row.kind]);
      for (int chained = 0; chained < 2; chained++) {
        for (int s = 0; s < kSides; s++) std::fprintf(csv, ",%.2f", row.best[chained][s]);
      }
      std::fprintf(csv, ",%.2f\n", ghz);
    }
    std::printf("%4d %6d  %-8s |", row.key_len, row.kpf, kKindName[row.kind]);
    for (int chained = 0; chained < 2; chained++) {
      for (int s = 0; s < kSides; s++)
        std::printf(" %5.1f (%3.0f)", row.best[chained][s], row.best[chained][s] * ghz);
      std::printf(" |");
    }
    std::printf(" %5.2f %6.2f\n", row.best[0][kLevelDB] / row.best[0][kCApi],
                row.best[0][kLevelDB] / row.best[0][kModel]);
  }
  if (csv != nullptr) std::fclose(csv);
  std::printf(
      "\nLevelDB / C API and LevelDB / model: independent queries (>1 = faster than LevelDB).\n"
      "The model is the ceiling of any implementation of the format that answers one key per\n"
      "call this way. Chained: the C API and the model answer from the probed bytes (no branch\n"
      "on them), so the next key waits for their loads; LevelDB's answer comes through\n"
      "predicted branches, so for present keys its next query does not wait.\n");
  leveldb_bloom_policy_destroy(ours);
  delete policies.stock;
  delete policies.dropin;
  return 0;
}
