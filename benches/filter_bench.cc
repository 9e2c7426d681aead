// filter_bench: LevelDB 1.23's own Bloom filter policy against leveldb-bloom, in one process,
// on the same data, interleaved.
//
// Three sides per measurement:
//   LevelDB  leveldb::NewBloomFilterPolicy(bpk) from libleveldb.so, through its
//            leveldb::FilterPolicy interface (CreateFilter into a std::string, KeyMayMatch);
//   C API    leveldb-bloom's C API: leveldb_bloom_create_filter_slices (LevelDB's Slice array,
//            read in place) into a caller buffer, leveldb_bloom_key_may_match;
//   drop-in  the drop-in library's leveldb::FilterPolicy object (the one a LevelDB program
//            linked with it gets), same calls as LevelDB's.
// plus leveldb_bloom_key_may_match_batch (keys grouped by filter) against LevelDB's per-key
// KeyMayMatch on the same grouped sequence.
//
// Every measurement also checks: identical filter bytes from all three sides, identical
// answers from every side (and the batch), every present key found. Any difference aborts.
//
// Usage: leveldb_bloom_bench [--quick] [--csv FILE] [--reps N] [--min-ms MS] [--keys N]

#include <algorithm>
#include <cmath>
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
using bench::Stat;

enum Impl { kLevelDB = 0, kCApi = 1, kDropIn = 2, kNumImpls = 3 };
const char* const kImplName[kNumImpls] = {"LevelDB", "C API", "drop-in"};

struct Config : bench::CommonConfig {
  std::vector<int> key_lens{8, 16, 24, 64, 256};
  std::vector<int> keys_per_filter{10, 30, 100, 1000, 100000};
  std::vector<int> bits_per_key{10, 16};
};

struct Query {
  leveldb::Slice key;
  leveldb::Slice filter;
};

using bench::Grouped;

// Everything one cell (key length x keys per filter x bits per key) works on.
struct Cell : bench::CellKeys {
  size_t filter_bytes = 0;  // one filter's length
  std::string ref;                         // LevelDB's filters, concatenated: the query target
  std::vector<char> qpresent_keys, qabsent_keys;  // the keys again, in query order (contiguous)
  std::vector<Query> qpresent, qabsent;    // every key once, spread over the filters at random
  Grouped gpresent, gabsent;
  std::vector<uint8_t> ref_present, ref_absent, ref_gpresent, ref_gabsent;  // LevelDB's answers
};



// ---------------------------------------------------------------------------------------
// Data.
// ---------------------------------------------------------------------------------------


// Every key once, in random order, each asked of its filter; keys copied contiguously in
// query order (the key being looked up is at hand, the filter is wherever it is).
void BuildSpread(const std::vector<char>& keys, const Cell& c, Rng& rng, std::vector<char>* qkeys,
                 std::vector<Query>* q) {
  const std::vector<uint32_t> perm = bench::SpreadKeys(keys, c.keys, c.key_len, rng, qkeys);
  q->resize(c.keys);
  for (size_t i = 0; i < c.keys; i++) {
    size_t f = perm[i] / c.kpf;
    (*q)[i].key = leveldb::Slice(qkeys->data() + i * c.key_len, c.key_len);
    (*q)[i].filter = leveldb::Slice(c.ref.data() + f * c.filter_bytes, c.filter_bytes);
  }
}


// ---------------------------------------------------------------------------------------
// The timed loops. Each runs `passes` times over the whole cell; buffers are sized before.
// ---------------------------------------------------------------------------------------

struct Sides {
  const leveldb::FilterPolicy* stock;
  const leveldb::FilterPolicy* dropin;
  leveldb_bloom_policy* capi;
};

// Builds every filter of the cell, appended one after another (as LevelDB's filter block
// builder appends into its result_ string, reserved and cleared before the clock starts).
uint64_t TimeCreate(const Sides& s, Impl impl, const Cell& c, int passes, std::string* out,
                    std::vector<uint8_t>* buf) {
  const size_t total = c.filters * c.filter_bytes;
  if (impl == kCApi) {
    return bench::TimeCreateCApi(s.capi, c.build.data(), c.kpf, c.filters, total, passes, buf,
                                 kImplName[impl]);
  }
  const leveldb::FilterPolicy* policy = impl == kLevelDB ? s.stock : s.dropin;
  return bench::TimeCreateLevelDB(policy, c.build.data(), c.kpf, c.filters, total, passes, out,
                                  kImplName[impl]);
}

uint64_t TimeQueries(const Sides& s, Impl impl, const std::vector<Query>& q, int passes,
                     uint8_t* res) {
  const size_t n = q.size();
  const Query* qs = q.data();
  uint64_t t0, t1;
  if (impl == kCApi) {
    leveldb_bloom_policy* const p = s.capi;
    t0 = NowNs();
    for (int r = 0; r < passes; r++) {
      for (size_t i = 0; i < n; i++) {
        res[i] = leveldb_bloom_key_may_match(p, qs[i].key.data(), qs[i].key.size(),
                                             reinterpret_cast<const uint8_t*>(qs[i].filter.data()),
                                             qs[i].filter.size());
      }
    }
    t1 = NowNs();
  } else {
    const leveldb::FilterPolicy* policy = impl == kLevelDB ? s.stock : s.dropin;
    t0 = NowNs();
    for (int r = 0; r < passes; r++) {
      for (size_t i = 0; i < n; i++) res[i] = policy->KeyMayMatch(qs[i].key, qs[i].filter);
    }
    t1 = NowNs();
  }
  return t1 - t0;
}

// ---------------------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------------------


void CheckFilters(const Cell& c, const char* who, const uint8_t* got, size_t len) {
  if (len != c.ref.size()) Fail("%s: %s built %zu filter bytes, LevelDB %zu", bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), who, len, c.ref.size());
  if (std::memcmp(got, c.ref.data(), len) != 0) {
    size_t i = 0;
    while (got[i] == static_cast<uint8_t>(c.ref[i])) i++;
    Fail("%s: %s's filter bytes differ from LevelDB's at byte %zu (filter %zu): %02x vs %02x",
         bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), who, i, i / c.filter_bytes, got[i],
         static_cast<uint8_t>(c.ref[i]));
  }
}

void CheckAnswers(const Cell& c, const char* what, const char* who,
                  const std::vector<uint8_t>& ref, const uint8_t* got) {
  for (size_t i = 0; i < ref.size(); i++) {
    if ((got[i] != 0) != (ref[i] != 0)) {
      Fail("%s: %s: %s answers %d for query %zu, LevelDB %d", bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), what, who,
           got[i], i, ref[i]);
    }
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < ref.size(); i++) sum += got[i];
  bench::g_sink = bench::g_sink + sum;
}

// ---------------------------------------------------------------------------------------
// One cell.
// ---------------------------------------------------------------------------------------

enum Measure {
  kCreate,       // x 3 sides
  kPresent,      // x 3
  kAbsent,       // x 3
  kNumPerSide,
};
const char* const kMeasureName[kNumPerSide] = {"create", "present", "absent"};

struct Result {
  Stat side[kNumPerSide][kNumImpls];  // ns per key
  Stat grouped[2];                    // LevelDB per key on the grouped sequences (present, absent)
  Stat batch[2];                      // leveldb_bloom_key_may_match_batch, ns per key
  double fp_percent = 0;
  int passes[kNumPerSide + 2] = {};
};


Result RunCell(Cell& c, const Config& cfg, const Sides& s) {
  Result r;
  const size_t n = c.keys;
  std::string out;
  std::vector<uint8_t> buf;
  std::vector<uint8_t> res(n);

  // --- Create: LevelDB's output becomes the reference; warm-up run of each side, checked.
  double warm[kNumImpls];
  {
    warm[kLevelDB] = TimeCreate(s, kLevelDB, c, 1, &out, &buf);
    c.ref = out;  // the filters every query below is asked of
    warm[kCApi] = TimeCreate(s, kCApi, c, 1, &out, &buf);
    CheckFilters(c, "C API", buf.data(), buf.size());
    warm[kDropIn] = TimeCreate(s, kDropIn, c, 1, &out, &buf);
    CheckFilters(c, "drop-in", reinterpret_cast<const uint8_t*>(out.data()), out.size());
  }
  r.passes[kCreate] = bench::PassesFor(*std::min_element(warm, warm + kNumImpls), cfg.min_ms);

  // --- Query sets (they point into c.ref, fixed from here on).
  Rng rng = c.QueryRng();
  BuildSpread(c.build_keys, c, rng, &c.qpresent_keys, &c.qpresent);
  BuildSpread(c.absent_keys, c, rng, &c.qabsent_keys, &c.qabsent);
  bench::BuildGrouped(c.build_keys, c, rng, &c.gpresent);
  bench::BuildGrouped(c.absent_keys, c, rng, &c.gabsent);

  // --- Reference answers (LevelDB), then a checked warm-up of the other sides.
  const std::vector<Query>* qsets[2] = {&c.qpresent, &c.qabsent};
  std::vector<uint8_t>* qrefs[2] = {&c.ref_present, &c.ref_absent};
  for (int a = 0; a < 2; a++) {
    qrefs[a]->assign(n, 0);
    double w[kNumImpls];
    w[kLevelDB] = TimeQueries(s, kLevelDB, *qsets[a], 1, qrefs[a]->data());
    for (Impl impl : {kCApi, kDropIn}) {
      w[impl] = TimeQueries(s, impl, *qsets[a], 1, res.data());
      CheckAnswers(c, kMeasureName[kPresent + a], kImplName[impl], *qrefs[a], res.data());
    }
    r.passes[kPresent + a] = bench::PassesFor(*std::min_element(w, w + kNumImpls), cfg.min_ms);
  }
  for (size_t i = 0; i < n; i++) {
    if (!c.ref_present[i]) Fail("%s: LevelDB does not find present key %zu", bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), i);
  }
  size_t fp = 0;
  for (size_t i = 0; i < n; i++) fp += c.ref_absent[i];
  r.fp_percent = 100.0 * static_cast<double>(fp) / static_cast<double>(n);

  const Grouped* gsets[2] = {&c.gpresent, &c.gabsent};
  std::vector<uint8_t>* grefs[2] = {&c.ref_gpresent, &c.ref_gabsent};
  const uint8_t* const filters = reinterpret_cast<const uint8_t*>(c.ref.data());
  for (int a = 0; a < 2; a++) {
    grefs[a]->assign(n, 0);
    double w0 = bench::TimeGroupedLevelDB(s.stock, *gsets[a], c.ref.data(), c.filter_bytes, 1, grefs[a]->data());
    double w1 = bench::TimeBatchCApi(s.capi, *gsets[a], filters, c.filter_bytes, 1, res.data());
    CheckAnswers(c, a ? "batch absent" : "batch present", "batch", *grefs[a], res.data());
    r.passes[kNumPerSide + a] = bench::PassesFor(std::min(w0, w1), cfg.min_ms);
  }

  // --- Repetitions: every side once per measurement, order rotated per repetition.
  std::vector<double> t[kNumPerSide][kNumImpls];
  std::vector<double> tg[2], tb[2];
  for (int rep = 0; rep < cfg.reps; rep++) {
    Impl order[kNumImpls];
    for (int k = 0; k < kNumImpls; k++) order[k] = static_cast<Impl>((rep + k) % kNumImpls);

    int p = r.passes[kCreate];
    for (Impl impl : order) {
      double ns = TimeCreate(s, impl, c, p, &out, &buf);
      t[kCreate][impl].push_back(ns / (double(p) * n));
      if (impl == kCApi) CheckFilters(c, "C API", buf.data(), buf.size());
      else CheckFilters(c, kImplName[impl], reinterpret_cast<const uint8_t*>(out.data()), out.size());
    }
    for (int a = 0; a < 2; a++) {
      p = r.passes[kPresent + a];
      for (Impl impl : order) {
        double ns = TimeQueries(s, impl, *qsets[a], p, res.data());
        t[kPresent + a][impl].push_back(ns / (double(p) * n));
        CheckAnswers(c, kMeasureName[kPresent + a], kImplName[impl], *qrefs[a], res.data());
      }
    }
    for (int a = 0; a < 2; a++) {
      p = r.passes[kNumPerSide + a];
      for (int k = 0; k < 2; k++) {
        if ((k + rep) % 2 == 0) {
          double ns = bench::TimeGroupedLevelDB(s.stock, *gsets[a], c.ref.data(), c.filter_bytes, p, res.data());
          tg[a].push_back(ns / (double(p) * n));
          CheckAnswers(c, "grouped", "LevelDB", *grefs[a], res.data());
        } else {
          double ns = bench::TimeBatchCApi(s.capi, *gsets[a], filters, c.filter_bytes, p, res.data());
          tb[a].push_back(ns / (double(p) * n));
          CheckAnswers(c, a ? "batch absent" : "batch present", "batch", *grefs[a], res.data());
        }
      }
    }
  }
  for (int m = 0; m < kNumPerSide; m++)
    for (int i = 0; i < kNumImpls; i++) r.side[m][i] = bench::Summarize(t[m][i]);
  for (int a = 0; a < 2; a++) {
    r.grouped[a] = bench::Summarize(tg[a]);
    r.batch[a] = bench::Summarize(tb[a]);
  }
  return r;
}

void MakeCell(Cell* c, int key_len, int kpf, int bpk, size_t keys_total) {
  // Same keys for both bits-per-key settings (seed independent of bpk).
  c->Make(key_len, kpf, bpk, keys_total, 0xb100f00du ^ (uint64_t(key_len) << 32) ^ uint64_t(kpf) << 8);
  c->filter_bytes = bench::BloomFilterBytes(kpf, bpk);
}

// ---------------------------------------------------------------------------------------
// Output.
// ---------------------------------------------------------------------------------------

double Ratio(const Stat& leveldb, const Stat& ours) {
  return ours.median > 0 ? leveldb.median / ours.median : 0;
}

void PrintTableHeader(int bpk) {
  std::printf(
      "\nbits per key %d: ns per key (median), and LevelDB / ours (>1 = leveldb-bloom faster)\n",
      bpk);
  std::printf(
      "%4s %7s %6s | %-33s | %-33s | %-33s | %-19s | %-19s | %5s\n", "key", "keys/", "",
      "create filter, ns per key", "query present key, ns", "query absent key, ns",
      "batch present, ns", "batch absent, ns", "FP");
  std::printf(
      "%4s %7s %6s | %6s %6s %6s %6s %6s | %6s %6s %6s %6s %6s | %6s %6s %6s %6s %6s | %6s "
      "%5s %6s | %6s %5s %6s | %5s\n",
      "len", "filter", "filtrs", "LvlDB", "C API", "dropin", "xCAPI", "xDrop", "LvlDB", "C API",
      "dropin", "xCAPI", "xDrop", "LvlDB", "C API", "dropin", "xCAPI", "xDrop", "LvlDB*", "batch",
      "xLvlDB", "LvlDB*", "batch", "xLvlDB", "%");
}

void PrintRow(const Cell& c, const Result& r) {
  std::printf("%4d %7d %6zu |", c.key_len, c.kpf, c.filters);
  for (int m = 0; m < kNumPerSide; m++) {
    const Stat* s = r.side[m];
    std::printf(" %6.2f %6.2f %6.2f %6.2f %6.2f |", s[kLevelDB].median, s[kCApi].median,
                s[kDropIn].median, Ratio(s[kLevelDB], s[kCApi]), Ratio(s[kLevelDB], s[kDropIn]));
  }
  for (int a = 0; a < 2; a++) {
    std::printf(" %6.2f %5.2f %6.2f |", r.grouped[a].median, r.batch[a].median,
                Ratio(r.grouped[a], r.batch[a]));
  }
  std::printf(" %5.2f\n", r.fp_percent);
  std::fflush(stdout);
}

void WriteCsvHeader(FILE* f) {
  std::fprintf(f, "bpk,key_len,keys_per_filter,filters,keys,reps");
  for (int m = 0; m < kNumPerSide; m++) {
    const char* mn = kMeasureName[m];
    std::fprintf(f, ",%s_leveldb_ns,%s_capi_ns,%s_dropin_ns,%s_capi_ratio,%s_dropin_ratio", mn,
                 mn, mn, mn, mn);
  }
  for (const char* a : {"batch_present", "batch_absent"}) {
    std::fprintf(f, ",%s_leveldb_per_key_ns,%s_ns,%s_ratio", a, a, a);
  }
  for (int m = 0; m < kNumPerSide; m++) {
    const char* mn = kMeasureName[m];
    std::fprintf(f, ",%s_leveldb_min_ns,%s_leveldb_max_ns,%s_capi_min_ns,%s_capi_max_ns", mn, mn,
                 mn, mn);
  }
  std::fprintf(f, ",fp_percent\n");
}

void WriteCsvRow(FILE* f, const Cell& c, const Result& r, int reps) {
  std::fprintf(f, "%d,%d,%d,%zu,%zu,%d", c.bpk, c.key_len, c.kpf, c.filters, c.keys, reps);
  for (int m = 0; m < kNumPerSide; m++) {
    const Stat* s = r.side[m];
    std::fprintf(f, ",%.3f,%.3f,%.3f,%.3f,%.3f", s[kLevelDB].median, s[kCApi].median,
                 s[kDropIn].median, Ratio(s[kLevelDB], s[kCApi]), Ratio(s[kLevelDB], s[kDropIn]));
  }
  for (int a = 0; a < 2; a++) {
    std::fprintf(f, ",%.3f,%.3f,%.3f", r.grouped[a].median, r.batch[a].median,
                 Ratio(r.grouped[a], r.batch[a]));
  }
  for (int m = 0; m < kNumPerSide; m++) {
    const Stat* s = r.side[m];
    std::fprintf(f, ",%.3f,%.3f,%.3f,%.3f", s[kLevelDB].min, s[kLevelDB].max, s[kCApi].min,
                 s[kCApi].max);
  }
  std::fprintf(f, ",%.4f\n", r.fp_percent);
  std::fflush(f);
}

// The project's targets: bpk 10, 16- and 24-byte keys, 30 to 1,000 keys per filter: create
// >= 2.0x, present >= 1.5x, absent >= 2.0x (both the C API and the drop-in); no ratio below
// 1.0 anywhere; the batch call >= 4x LevelDB per key for 16-byte keys.
struct Done {
  int bpk, key_len, kpf;
  Result r;
};

bool Targeted(const Done& d) {
  return d.bpk == 10 && (d.key_len == 16 || d.key_len == 24) && d.kpf >= 30 && d.kpf <= 1000;
}

void PrintSummary(const std::vector<Done>& all, bool quick) {
  if (quick) {
    std::printf("targets: not judged in --quick mode (tiny sizes, one repetition)\n");
    return;
  }
  int missed = 0, below = 0;
  const double want[kNumPerSide] = {2.0, 1.5, 2.0};
  std::printf("\ntargets, bpk 10, 16/24-byte keys, 30-1,000 keys per filter (LevelDB / ours, C API / drop-in):\n");
  for (const Done& d : all) {
    if (!Targeted(d)) continue;
    std::printf("  %3d B %5d keys/filter:", d.key_len, d.kpf);
    for (int m = 0; m < kNumPerSide; m++) {
      double rc = Ratio(d.r.side[m][kLevelDB], d.r.side[m][kCApi]);
      double rd = Ratio(d.r.side[m][kLevelDB], d.r.side[m][kDropIn]);
      bool ok = rc >= want[m] && rd >= want[m];
      missed += !ok;
      std::printf("  %s %4.2f/%4.2f (>=%.1f) %-4s", kMeasureName[m], rc, rd, want[m], ok ? "ok" : "MISS");
    }
    std::printf("\n");
  }
  std::printf("batch vs LevelDB per key on the same grouped sequence, 16-byte keys (want >= 4.0):\n");
  for (const Done& d : all) {
    if (d.key_len != 16) continue;
    std::printf("  bpk %2d %6d keys/filter:", d.bpk, d.kpf);
    for (int a = 0; a < 2; a++) {
      double r = Ratio(d.r.grouped[a], d.r.batch[a]);
      missed += r < 4.0;
      std::printf("  %s %5.2f %-4s", a ? "absent" : "present", r, r >= 4.0 ? "ok" : "MISS");
    }
    std::printf("\n");
  }
  std::printf("ratios below 1.0 (LevelDB faster), C = C API, D = drop-in, B = batch:\n");
  for (const Done& d : all) {
    std::string line;
    char b[64];
    for (int m = 0; m < kNumPerSide; m++) {
      for (Impl impl : {kCApi, kDropIn}) {
        double r = Ratio(d.r.side[m][kLevelDB], d.r.side[m][impl]);
        if (r < 1.0) {
          std::snprintf(b, sizeof b, " %s-%c %.2f", kMeasureName[m], impl == kCApi ? 'C' : 'D', r);
          line += b;
          below++;
        }
      }
    }
    for (int a = 0; a < 2; a++) {
      double r = Ratio(d.r.grouped[a], d.r.batch[a]);
      if (r < 1.0) {
        std::snprintf(b, sizeof b, " %s-B %.2f", a ? "absent" : "present", r);
        line += b;
        below++;
      }
    }
    if (!line.empty()) std::printf("  bpk %2d %3d B %6d keys/filter:%s\n", d.bpk, d.key_len, d.kpf, line.c_str());
  }
  if (below == 0) std::printf("  none\n");
  std::printf("targets: %s (%d targets missed, %d ratios below 1.0)\n",
              missed == 0 && below == 0 ? "ALL MET" : "NOT MET", missed, below);
}

void Usage() {
  std::printf(
      "usage: leveldb_bloom_bench [--quick] [--csv FILE] [--reps N] [--min-ms MS] [--keys N]\n"
      "  --quick     tiny sizes, one repetition (a smoke test: checks still run)\n"
      "  --csv FILE  also write one CSV row per cell to FILE\n"
      "  --reps N    repetitions per cell (default 9; the median is reported)\n"
      "  --min-ms MS least duration of one timed measurement of the fastest side (default 8)\n"
      "  --keys N    keys per cell (default 100000; at least one filter)\n");
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  support::parse_args(argc, argv, Usage,
                      [&](const std::string& a, auto value) { return cfg.ParseCommon(a, value); });
  if (cfg.quick) {
    cfg.key_lens = {8, 24};
    cfg.keys_per_filter = {10, 100, 3000};
    cfg.QuickDefaults();
  }
  if (cfg.reps < 1) cfg.reps = 1;

  const uint64_t start = NowNs();
  bench::PrintMachine("leveldb_bloom_bench: Bloom filter policy, LevelDB 1.23 vs leveldb-bloom");
  std::printf(
      "method: per cell %zu keys (pseudo-random bytes) in filters of N keys; the same key\n"
      "  storage for every side. create: all filters built back to back, appended into one\n"
      "  reserved std::string (LevelDB, drop-in) or one caller buffer (C API,\n"
      "  leveldb_bloom_create_filter_slices on LevelDB's Slice array). present: every key once,\n"
      "  in random order, against the filter holding it; absent: as many other random keys, N per\n"
      "  filter, in random order; query keys copied contiguously in query order (the key is at\n"
      "  hand, its filter anywhere among the cell's). batch: keys grouped by filter (filters in\n"
      "  random order), leveldb_bloom_key_may_match_batch per filter vs LevelDB's per-key\n"
      "  KeyMayMatch on the same grouped sequence (LvlDB*). %d repetitions per cell (median);\n"
      "  sides rotated within each; each timing >= %.1f ms for the fastest side. Every timing's\n"
      "  filter bytes and answers are checked against LevelDB's.\n",
      cfg.keys_total, cfg.reps, cfg.min_ms);

  FILE* csv = bench::OpenCsv(cfg.csv, WriteCsvHeader);

  std::vector<Done> done;
  for (size_t b = 0; b < cfg.bits_per_key.size(); b++) {
    const int bpk = cfg.bits_per_key[b];
    bench::Policies pol = bench::MakePolicies(bpk, b == 0);
    Sides s{pol.stock, pol.dropin, leveldb_bloom_policy_create(bpk)};
    if (s.capi == nullptr) Fail("leveldb_bloom_policy_create(%d) failed", bpk);
    PrintTableHeader(bpk);
    for (int key_len : cfg.key_lens) {
      for (int kpf : cfg.keys_per_filter) {
        Cell c;
        MakeCell(&c, key_len, kpf, bpk, std::max<size_t>(cfg.keys_total, 1));
        Result r = RunCell(c, cfg, s);
        PrintRow(c, r);
        if (csv) WriteCsvRow(csv, c, r, cfg.reps);
        done.push_back(Done{bpk, key_len, kpf, r});
      }
    }
    leveldb_bloom_policy_destroy(s.capi);
    delete pol.dropin;
    delete pol.stock;
  }
  if (csv) std::fclose(csv);

  std::printf(
      "\nLvlDB* = LevelDB's KeyMayMatch per key on the batch's grouped sequence; x = LevelDB "
      "time / ours.\nFP = false-positive rate of the absent keys (identical for every side).\n");
  std::printf("\nall checks passed: %zu cells, filter bytes and answers identical on every side\n",
              done.size());
  PrintSummary(done, cfg.quick);
  std::printf("peak memory (ru_maxrss): %.1f MiB; run time %.1f s; load average at end %s\n",
              bench::PeakRssMiB(), (NowNs() - start) / 1e9, bench::LoadAvg().c_str());
  return 0;
}
