// compact_bench: leveldb-bloom's opt-in compact filter format against LevelDB 1.23's own
// Bloom filter policy at EQUAL bits per key, in one process, on the same keys, interleaved.
//
// Two sides per measurement:
//   LevelDB  leveldb::NewBloomFilterPolicy(bpk) from libleveldb.so, through its
//            leveldb::FilterPolicy interface (CreateFilter appending to a std::string,
//            KeyMayMatch);
//   compact  leveldb_bloom_policy_create_compact(bpk) through leveldb-bloom's C API
//            (leveldb_bloom_create_filter_slices on LevelDB's Slice array into a caller
//            buffer, leveldb_bloom_key_may_match).
//
// Per cell (bits per key x key length x keys per filter) it reports the filter length of each
// side (equal for integral bits per key: checked), the false-positive rate of each on random
// absent keys (at least 1,000,000 probes, more until each side has seen enough false
// positives for a precise rate), their ratio, and create / query-present / query-absent /
// batch time per key of each side, with the ratio compact / LevelDB (">1" = compact slower).
// Key lengths: 16 bytes at every bits per key, 8, 24 and 64 more at 10.
//
// Checks (any failure aborts): every present key answers "may match" on both sides in every
// timing; every answer and every filter byte of every timing equals the side's first
// (reference) run; compact filter lengths equal leveldb_bloom_filter_len and LevelDB's
// lengths; stock LevelDB answers "may match" for every key asked of a compact filter (the
// format's marker byte); the compact policy answers LevelDB's Bloom filters as LevelDB does.
// No timing is judged: the targets are displayed next to the ratios, never asserted.
//
// Usage: leveldb_bloom_compact_bench [--quick] [--csv FILE] [--reps N] [--min-ms MS]
//                                    [--keys N] [--fp-probes N] [--fp-count N] [--fp-max N]

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

enum Side { kLevelDB = 0, kCompact = 1, kNumSides = 2 };
const char* const kSideName[kNumSides] = {"LevelDB", "compact"};

// batch: leveldb_bloom_key_may_match_batch (compact, one call per filter) against LevelDB's
// KeyMayMatch key by key (Bloom) on the same grouped present keys.
enum Measure { kCreate = 0, kPresent = 1, kAbsent = 2, kBatch = 3, kNumMeasures = 4 };
const char* const kMeasureName[kNumMeasures] = {"create", "present", "absent", "batch"};

struct Config : bench::CommonConfig {
  // (bits per key, key length) pairs, each with every keys-per-filter value.
  std::vector<int> bits_per_key{6, 8, 10, 12, 16};
  // 10 to 1,000: LevelDB's tables; 10,000 and 100,000: the C API's large filters, wide
  // (2,048 bytes or more) at every setting.
  std::vector<int> keys_per_filter{10, 20, 50, 100, 200, 1000, 10000, 100000};
  int key_len = 16;
  std::vector<int> extra_key_lens{8, 24, 64};  // more row sets, at extra_bpk
  int extra_bpk = 10;
  size_t fp_min_probes = 1000000;   // absent keys asked of each side, at least
  size_t fp_min_count = 2000;       // ... and until each side has this many false positives
  size_t fp_max_probes = 64000000;  // ... or this many probes
};




struct Policies {
  const leveldb::FilterPolicy* stock;  // LevelDB 1.23's own
  leveldb_bloom_policy* compact;       // leveldb-bloom, compact format, C API
};

// One query: a key and the index of the filter it is asked of.
struct Query {
  const char* key;
  uint32_t filter;
};

// Everything one cell works on.
struct Cell : bench::CellKeys {
  size_t bloom_bytes = 0, compact_bytes = 0;  // one filter's length, per side
  std::string bloom;                  // LevelDB's filters, concatenated (reference)
  std::vector<uint8_t> compact;       // the compact filters, concatenated (reference)
  std::vector<char> qpresent_keys, qabsent_keys;  // the keys again, in query order
  std::vector<Query> qpresent, qabsent;  // every key once, spread over the filters at random
  bench::Grouped gpresent;               // the present keys grouped by filter (batch)
  std::vector<uint8_t> ref[kNumMeasures][kNumSides];  // first answers of each side
};


void MakeCell(Cell* c, int key_len, int kpf, int bpk, size_t keys_total) {
  c->Make(key_len, kpf, bpk, keys_total,
          0xc0ac7b00u ^ (uint64_t(key_len) << 32) ^ (uint64_t(kpf) << 8) ^ uint64_t(bpk));
}

// Every key once, in random order, each asked of its filter; keys copied contiguously in
// query order (the key being looked up is at hand, its filter is wherever it is).
void BuildSpread(const std::vector<char>& keys, const Cell& c, Rng& rng, std::vector<char>* qkeys,
                 std::vector<Query>* q) {
  const std::vector<uint32_t> perm = bench::SpreadKeys(keys, c.keys, c.key_len, rng, qkeys);
  q->resize(c.keys);
  for (size_t i = 0; i < c.keys; i++) {
    (*q)[i].key = qkeys->data() + i * c.key_len;
    (*q)[i].filter = static_cast<uint32_t>(perm[i] / c.kpf);
  }
}

// ---------------------------------------------------------------------------------------
// The timed loops. Each runs `passes` times over the whole cell; buffers are sized before.
// ---------------------------------------------------------------------------------------

// Builds every filter of the cell, one after another: LevelDB appending into one reserved
// std::string (as its filter block builder appends into result_), compact into one buffer.
uint64_t TimeCreate(const Policies& pol, Side side, const Cell& c, int passes, std::string* out,
                    std::vector<uint8_t>* buf) {
  const std::string name = bench::CellName(c.bpk, c.key_len, c.kpf);
  if (side == kCompact) {
    return bench::TimeCreateCApi(pol.compact, c.build.data(), c.kpf, c.filters,
                                 c.filters * c.compact_bytes, passes, buf, name.c_str());
  }
  return bench::TimeCreateLevelDB(pol.stock, c.build.data(), c.kpf, c.filters,
                                  c.filters * c.bloom_bytes, passes, out, name.c_str());
}

uint64_t TimeQueries(const Policies& pol, Side side, const Cell& c, const std::vector<Query>& q,
                     int passes, uint8_t* res) {
  const size_t n = q.size();
  const Query* qs = q.data();
  const size_t klen = static_cast<size_t>(c.key_len);
  uint64_t t0, t1;
  if (side == kCompact) {
    leveldb_bloom_policy* const p = pol.compact;
    const uint8_t* const base = c.compact.data();
    const size_t flen = c.compact_bytes;
    t0 = NowNs();
    for (int r = 0; r < passes; r++) {
      for (size_t i = 0; i < n; i++) {
        res[i] = leveldb_bloom_key_may_match(p, qs[i].key, klen, base + qs[i].filter * flen, flen);
      }
    }
    t1 = NowNs();
  } else {
    const leveldb::FilterPolicy* policy = pol.stock;
    const char* const base = c.bloom.data();
    const size_t flen = c.bloom_bytes;
    t0 = NowNs();
    for (int r = 0; r < passes; r++) {
      for (size_t i = 0; i < n; i++) {
        res[i] = policy->KeyMayMatch(leveldb::Slice(qs[i].key, klen),
                                     leveldb::Slice(base + qs[i].filter * flen, flen));
      }
    }
    t1 = NowNs();
  }
  return t1 - t0;
}

// The batch measure: compact's batch call per filter, or LevelDB per key, on the grouped
// present keys.
uint64_t TimeBatch(const Policies& pol, Side side, const Cell& c, int passes, uint8_t* res) {
  if (side == kCompact) {
    return bench::TimeBatchCApi(pol.compact, c.gpresent, c.compact.data(), c.compact_bytes,
                                passes, res);
  }
  return bench::TimeGroupedLevelDB(pol.stock, c.gpresent, c.bloom.data(), c.bloom_bytes, passes,
                                   res);
}

// ---------------------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------------------

void CheckSame(const Cell& c, const char* what, Side side, const uint8_t* ref, const uint8_t* got,
               size_t len) {
  if (std::memcmp(ref, got, len) == 0) return;
  size_t i = 0;
  while (ref[i] == got[i]) i++;
  Fail("%s: %s: %s differs from its first run at index %zu: %u vs %u", bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), what,
       kSideName[side], i, got[i], ref[i]);
}

void CheckAllPresent(const Cell& c, Side side, const uint8_t* res, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!res[i]) {
      Fail("%s: %s answers \"certainly absent\" for present key %zu (a false negative)",
           bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), kSideName[side], i);
    }
  }
}

// Checks a query run against the side's reference answers (the first run), and that every
// present key was found.
void CheckAnswers(const Cell& c, Measure m, Side side, const uint8_t* res) {
  const std::vector<uint8_t>& ref = c.ref[m][side];
  if (m == kPresent || m == kBatch) CheckAllPresent(c, side, res, ref.size());
  CheckSame(c, kMeasureName[m], side, ref.data(), res, ref.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < ref.size(); i++) sum += res[i];
  bench::g_sink = bench::g_sink + sum;
}

// The filters just built: lengths as promised, and each compact filter as long as
// leveldb_bloom_filter_len says and ending in a marker byte stock LevelDB passes over.
void CheckLengths(const Cell& c, const Policies& pol) {
  size_t want = bench::BloomFilterBytes(c.kpf, c.bpk);
  size_t api = leveldb_bloom_filter_len(pol.compact, c.kpf);
  if (c.bloom_bytes != want) {
    Fail("%s: LevelDB's filter is %zu bytes, expected %zu", bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), c.bloom_bytes, want);
  }
  if (api != c.compact_bytes) {
    Fail("%s: leveldb_bloom_filter_len says %zu bytes, a compact filter is %zu",
         bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), api, c.compact_bytes);
  }
  if (c.compact_bytes != c.bloom_bytes) {
    Fail("%s: compact filter %zu bytes, LevelDB's %zu: must be equal at integral bits per key",
         bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), c.compact_bytes, c.bloom_bytes);
  }
  for (size_t f = 0; f < c.filters; f++) {
    uint8_t marker = c.compact[(f + 1) * c.compact_bytes - 1];
    if (marker != 31) {
      Fail("%s: compact filter %zu ends in %u, not the compact format's 31",
           bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), f, marker);
    }
  }
}

// Cross-format answers, once per cell: stock LevelDB must answer "may match" for every key
// asked of a compact filter, and the compact policy must answer LevelDB's Bloom filters as
// LevelDB does.
void CheckCrossFormat(const Cell& c, const Policies& pol) {
  const size_t klen = static_cast<size_t>(c.key_len);
  for (const std::vector<Query>* q : {&c.qpresent, &c.qabsent}) {
    for (size_t i = 0; i < q->size(); i++) {
      const Query& x = (*q)[i];
      const uint8_t* cf = c.compact.data() + x.filter * c.compact_bytes;
      if (!pol.stock->KeyMayMatch(leveldb::Slice(x.key, klen),
                                  leveldb::Slice(reinterpret_cast<const char*>(cf), c.compact_bytes))) {
        Fail("%s: stock LevelDB answers \"absent\" for query %zu on a compact filter",
             bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), i);
      }
      const char* bf = c.bloom.data() + x.filter * c.bloom_bytes;
      bool stock = pol.stock->KeyMayMatch(leveldb::Slice(x.key, klen), leveldb::Slice(bf, c.bloom_bytes));
      bool ours = leveldb_bloom_key_may_match(pol.compact, x.key, klen,
                                              reinterpret_cast<const uint8_t*>(bf), c.bloom_bytes);
      if (stock != ours) {
        Fail("%s: the compact policy answers %d for query %zu on LevelDB's Bloom filter, LevelDB %d",
             bench::CellName(c.bpk, c.key_len, c.kpf).c_str(), ours, i, stock);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// False positives: fresh random keys (16 MiB or so at a time), each asked of a random filter
// of the cell on both sides, until both sides have seen fp_min_count false positives (and at
// least fp_min_probes probes), or fp_max_probes.
// ---------------------------------------------------------------------------------------

struct FpResult {
  size_t probes = 0;
  size_t count[kNumSides] = {0, 0};
  double rate(Side s) const { return probes ? double(count[s]) / double(probes) : 0; }
  // compact / Bloom, with the relative standard error of a ratio of two Poisson counts.
  double ratio() const { return count[kLevelDB] ? double(count[kCompact]) / double(count[kLevelDB]) : 0; }
  double ratio_rel_err() const {
    if (!count[kLevelDB] || !count[kCompact]) return 0;
    return std::sqrt(1.0 / double(count[kLevelDB]) + 1.0 / double(count[kCompact]));
  }
};

FpResult MeasureFalsePositives(const Cell& c, const Policies& pol, const Config& cfg) {
  FpResult r;
  const size_t klen = static_cast<size_t>(c.key_len);
  const size_t chunk = std::min<size_t>(size_t{1} << 20, std::max<size_t>(cfg.fp_min_probes, 1));
  std::vector<char> keys(chunk * klen);
  std::vector<uint32_t> filt(chunk);
  Rng rng(0xfa15e000u ^ (uint64_t(c.key_len) << 40) ^ (uint64_t(c.kpf) << 8) ^ uint64_t(c.bpk));
  const leveldb::FilterPolicy* stock = pol.stock;
  leveldb_bloom_policy* const compact = pol.compact;
  while (r.probes < cfg.fp_max_probes) {
    if (r.probes >= cfg.fp_min_probes &&
        std::min(r.count[kLevelDB], r.count[kCompact]) >= cfg.fp_min_count) {
      break;
    }
    size_t n = std::min(chunk, cfg.fp_max_probes - r.probes);
    rng.Fill(keys.data(), n * klen);  // 2^-128 chance of meeting a present key: ignored
    for (size_t i = 0; i < n; i++) filt[i] = static_cast<uint32_t>(rng.Below(c.filters));
    size_t fb = 0, fc = 0;
    for (size_t i = 0; i < n; i++) {
      fb += stock->KeyMayMatch(leveldb::Slice(keys.data() + i * klen, klen),
                               leveldb::Slice(c.bloom.data() + filt[i] * c.bloom_bytes, c.bloom_bytes));
    }
    for (size_t i = 0; i < n; i++) {
      fc += leveldb_bloom_key_may_match(compact, keys.data() + i * klen, klen,
                                        c.compact.data() + filt[i] * c.compact_bytes,
                                        c.compact_bytes);
    }
    r.count[kLevelDB] += fb;
    r.count[kCompact] += fc;
    r.probes += n;
  }
  return r;
}

// ---------------------------------------------------------------------------------------
// One cell.
// ---------------------------------------------------------------------------------------

struct Result {
  Stat t[kNumMeasures][kNumSides];  // ns per key
  int passes[kNumMeasures] = {};
  FpResult fp;
  double ratio(Measure m) const {
    return t[m][kLevelDB].median > 0 ? t[m][kCompact].median / t[m][kLevelDB].median : 0;
  }
};


Result RunCell(Cell& c, const Config& cfg, const Policies& pol) {
  Result r;
  const size_t n = c.keys;
  std::string out;
  std::vector<uint8_t> buf;
  std::vector<uint8_t> res(n);

  // --- Create: each side's first filters become its reference (and the query targets).
  c.bloom_bytes = bench::BloomFilterBytes(c.kpf, c.bpk);
  c.compact_bytes = leveldb_bloom_filter_len(pol.compact, c.kpf);
  if (c.compact_bytes == 0) Fail("%s: leveldb_bloom_filter_len returned 0", bench::CellName(c.bpk, c.key_len, c.kpf).c_str());
  double warm[kNumSides];
  warm[kLevelDB] = TimeCreate(pol, kLevelDB, c, 1, &out, &buf);
  c.bloom = out;
  warm[kCompact] = TimeCreate(pol, kCompact, c, 1, &out, &buf);
  c.compact = buf;
  CheckLengths(c, pol);
  r.passes[kCreate] = bench::PassesFor(std::min(warm[0], warm[1]), cfg.min_ms);

  // --- Query sets (they index the reference filters, fixed from here on).
  Rng rng = c.QueryRng();
  BuildSpread(c.build_keys, c, rng, &c.qpresent_keys, &c.qpresent);
  BuildSpread(c.absent_keys, c, rng, &c.qabsent_keys, &c.qabsent);
  bench::BuildGrouped(c.build_keys, c, rng, &c.gpresent);
  CheckCrossFormat(c, pol);

  // --- Reference answers of each side (present: all must be found), passes per measure.
  const std::vector<Query>* qsets[2] = {&c.qpresent, &c.qabsent};
  for (int a = 0; a < 2; a++) {
    Measure m = static_cast<Measure>(kPresent + a);
    double w[kNumSides];
    for (int s = 0; s < kNumSides; s++) {
      c.ref[m][s].assign(n, 0);
      w[s] = TimeQueries(pol, static_cast<Side>(s), c, *qsets[a], 1, c.ref[m][s].data());
      if (m == kPresent) CheckAllPresent(c, static_cast<Side>(s), c.ref[m][s].data(), n);
    }
    r.passes[m] = bench::PassesFor(std::min(w[0], w[1]), cfg.min_ms);
  }
  {
    double w[kNumSides];
    for (int s = 0; s < kNumSides; s++) {
      c.ref[kBatch][s].assign(n, 0);
      w[s] = TimeBatch(pol, static_cast<Side>(s), c, 1, c.ref[kBatch][s].data());
      CheckAllPresent(c, static_cast<Side>(s), c.ref[kBatch][s].data(), n);
    }
    r.passes[kBatch] = bench::PassesFor(std::min(w[0], w[1]), cfg.min_ms);
  }

  // --- Repetitions: both sides once per measurement, their order alternating per repetition.
  std::vector<double> t[kNumMeasures][kNumSides];
  for (int rep = 0; rep < cfg.reps; rep++) {
    Side order[kNumSides] = {static_cast<Side>(rep % 2), static_cast<Side>((rep + 1) % 2)};
    int p = r.passes[kCreate];
    for (Side s : order) {
      double ns = TimeCreate(pol, s, c, p, &out, &buf);
      t[kCreate][s].push_back(ns / (double(p) * n));
      if (s == kCompact) CheckSame(c, "compact filter bytes", s, c.compact.data(), buf.data(), buf.size());
      else CheckSame(c, "LevelDB filter bytes", s, reinterpret_cast<const uint8_t*>(c.bloom.data()),
                     reinterpret_cast<const uint8_t*>(out.data()), out.size());
    }
    for (int a = 0; a < 2; a++) {
      Measure m = static_cast<Measure>(kPresent + a);
      p = r.passes[m];
      for (Side s : order) {
        double ns = TimeQueries(pol, s, c, *qsets[a], p, res.data());
        t[m][s].push_back(ns / (double(p) * n));
        CheckAnswers(c, m, s, res.data());
      }
    }
    p = r.passes[kBatch];
    for (Side s : order) {
      double ns = TimeBatch(pol, s, c, p, res.data());
      t[kBatch][s].push_back(ns / (double(p) * n));
      CheckAnswers(c, kBatch, s, res.data());
    }
  }
  for (int m = 0; m < kNumMeasures; m++)
    for (int s = 0; s < kNumSides; s++) r.t[m][s] = bench::Summarize(t[m][s]);

  r.fp = MeasureFalsePositives(c, pol, cfg);
  return r;
}

// ---------------------------------------------------------------------------------------
// The targets (displayed, never asserted). False positives: at 10 bits per key at most
// 0.15% from 100 keys a filter on, 0.18% at 50, and fewer than Bloom's everywhere. Time, as a
// multiple of LevelDB's: present-key query <= 1.0, absent-key <= 1/1.5, batch <= 1/2 (of
// LevelDB's one key at a time), create <= 1.5 from 50 keys a filter on (3.0 below).
// ---------------------------------------------------------------------------------------

// The most false positives, in percent, at `bpk` and `kpf`; 0 where the bound is "fewer
// than Bloom's".
double FpPercentBound(int bpk, int kpf) {
  if (bpk != 10 || kpf < 50) return 0;
  return kpf >= 100 ? 0.15 : 0.18;
}
bool FpOk(int bpk, int kpf, double compact_percent, double ratio) {
  double t = FpPercentBound(bpk, kpf);
  return ratio < 1.0 && (t == 0 || compact_percent <= t);
}
std::string FpBoundText(int bpk, int kpf) {
  char b[16];
  double t = FpPercentBound(bpk, kpf);
  if (t == 0) return "x<1";
  std::snprintf(b, sizeof b, "<=%.2f%%", t);
  return b;
}
double TimeBound(Measure m, int kpf) {
  switch (m) {
    case kCreate: return kpf >= 50 ? 1.5 : 3.0;
    case kPresent: return 1.0;
    case kAbsent: return 1.0 / 1.5;
    default: return 0.5;
  }
}
bool TimeOk(Measure m, int kpf, double ratio) { return ratio <= TimeBound(m, kpf); }

// ---------------------------------------------------------------------------------------
// Output.
// ---------------------------------------------------------------------------------------

void PrintTableHeader(int bpk, int reps) {
  std::printf(
      "\nbits per key %d: filter bytes; false positives on random absent keys; ns per key (median "
      "of %d);\nx = compact / LevelDB (false positives: >1 = more; time: x LevelDB's time, >1 = "
      "slower); ok/OVER = within the design bound or not\n",
      bpk, reps);
  std::printf("%4s %6s %6s | %-13s | %-46s | %-24s | %-24s | %-24s | %-24s |\n", "key", "keys/",
              "", "filter bytes", "false positives, compact vs Bloom", "create, ns per key",
              "query present key, ns", "query absent key, ns", "batch, present keys, ns");
  std::printf("%4s %6s %6s | %6s %6s | %6s %6s %7s %5s %4s %-13s |", "len", "filter", "filtrs",
              "LvlDB", "cmpct", "probes", "Bloom%", "cmpct%", "x", "+-%", "   target");
  for (int m = 0; m < kNumMeasures; m++) std::printf(" %6s %6s %5s %-4s |", "LvlDB", "cmpct", "x", "");
  std::printf("\n");
}

std::string Probes(size_t n) {
  char b[16];
  if (n >= 1000000) std::snprintf(b, sizeof b, "%.1fM", n / 1e6);
  else std::snprintf(b, sizeof b, "%.0fk", n / 1e3);
  return b;
}

void PrintRow(const Cell& c, const Result& r) {
  const FpResult& fp = r.fp;
  double fr = fp.ratio();
  std::printf("%4d %6d %6zu | %6zu %6zu | %6s %6.3f %7.4f %5.3f %4.1f %8s %-4s |", c.key_len,
              c.kpf, c.filters, c.bloom_bytes, c.compact_bytes, Probes(fp.probes).c_str(),
              100 * fp.rate(kLevelDB), 100 * fp.rate(kCompact), fr, 100 * fp.ratio_rel_err(),
              FpBoundText(c.bpk, c.kpf).c_str(),
              FpOk(c.bpk, c.kpf, 100 * fp.rate(kCompact), fr) ? "ok" : "OVER");
  for (int m = 0; m < kNumMeasures; m++) {
    double x = r.ratio(static_cast<Measure>(m));
    std::printf(" %6.2f %6.2f %5.2f %-4s |", r.t[m][kLevelDB].median, r.t[m][kCompact].median, x,
                TimeOk(static_cast<Measure>(m), c.kpf, x) ? "ok" : "OVER");
  }
  std::printf("\n");
  std::fflush(stdout);
}

void WriteCsvHeader(FILE* f) {
  std::fprintf(f,
               "bpk,key_len,keys_per_filter,filters,keys,reps,bloom_bytes,compact_bytes,"
               "fp_probes,fp_bloom_count,fp_compact_count,fp_bloom_percent,fp_compact_percent,"
               "fp_ratio,fp_ratio_rel_err");
  for (int m = 0; m < kNumMeasures; m++) {
    const char* mn = kMeasureName[m];
    std::fprintf(f, ",%s_leveldb_ns,%s_compact_ns,%s_ratio", mn, mn, mn);
  }
  for (int m = 0; m < kNumMeasures; m++) {
    const char* mn = kMeasureName[m];
    std::fprintf(f, ",%s_leveldb_min_ns,%s_leveldb_max_ns,%s_compact_min_ns,%s_compact_max_ns", mn,
                 mn, mn, mn);
  }
  std::fprintf(f, "\n");
}

void WriteCsvRow(FILE* f, const Cell& c, const Result& r, int reps) {
  const FpResult& fp = r.fp;
  std::fprintf(f, "%d,%d,%d,%zu,%zu,%d,%zu,%zu,%zu,%zu,%zu,%.5f,%.5f,%.4f,%.4f", c.bpk, c.key_len,
               c.kpf, c.filters, c.keys, reps, c.bloom_bytes, c.compact_bytes, fp.probes,
               fp.count[kLevelDB], fp.count[kCompact], 100 * fp.rate(kLevelDB),
               100 * fp.rate(kCompact), fp.ratio(), fp.ratio_rel_err());
  for (int m = 0; m < kNumMeasures; m++) {
    std::fprintf(f, ",%.3f,%.3f,%.3f", r.t[m][kLevelDB].median, r.t[m][kCompact].median,
                 r.ratio(static_cast<Measure>(m)));
  }
  for (int m = 0; m < kNumMeasures; m++) {
    std::fprintf(f, ",%.3f,%.3f,%.3f,%.3f", r.t[m][kLevelDB].min, r.t[m][kLevelDB].max,
                 r.t[m][kCompact].min, r.t[m][kCompact].max);
  }
  std::fprintf(f, "\n");
  std::fflush(f);
}

struct Done {
  int bpk, key_len, kpf;
  size_t bytes;
  Result r;
};

struct Range {
  double lo = 0, hi = 0;
  bool any = false;
  void Add(double v) {
    if (!any) lo = hi = v, any = true;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  std::string Str(const char* fmt) const {
    if (!any) return "-";
    char a[32], b[32];
    std::snprintf(a, sizeof a, fmt, lo);
    std::snprintf(b, sizeof b, fmt, hi);
    return std::string(a) == b ? std::string(a) : std::string(a) + "-" + b;
  }
};

void PrintSummary(const std::vector<Done>& all, const Config& cfg) {
  // The design bounds.
  int fp_missed = 0, time_missed = 0, cells = 0;
  std::string misses;
  for (const Done& d : all) {
    cells++;
    char b[96];
    if (!FpOk(d.bpk, d.kpf, 100 * d.r.fp.rate(kCompact), d.r.fp.ratio())) {
      fp_missed++;
      std::snprintf(b, sizeof b,
                    "  bpk %2d %2d B %4d keys/filter: FP %.4f%%, ratio %.3f (want %s)\n", d.bpk,
                    d.key_len, d.kpf, 100 * d.r.fp.rate(kCompact), d.r.fp.ratio(),
                    FpBoundText(d.bpk, d.kpf).c_str());
      misses += b;
    }
    std::string line;
    for (int m = 0; m < kNumMeasures; m++) {
      double x = d.r.ratio(static_cast<Measure>(m));
      if (!TimeOk(static_cast<Measure>(m), d.kpf, x)) {
        time_missed++;
        std::snprintf(b, sizeof b, "%s %s %.2fx (<= %.2fx)", line.empty() ? "" : ",",
                      kMeasureName[m], x, TimeBound(static_cast<Measure>(m), d.kpf));
        line += b;
      }
    }
    if (!line.empty()) {
      std::snprintf(b, sizeof b, "  bpk %2d %2d B %4d keys/filter: time x LevelDB's:", d.bpk,
                    d.key_len, d.kpf);
      misses += b + line + "\n";
    }
  }
  std::printf(
      "\ntargets (displayed, not asserted): FP at bpk 10 <= 0.15%% from 100 keys a filter, <= 0.18%% at\n"
      "50, and compact/Bloom < 1 everywhere; time as a multiple of LevelDB's: query present <= 1.0,\n"
      "absent <= 0.67, batch <= 0.5, create <= 1.5 from 50 keys a filter (3.0 below). %s\n",
      cfg.quick ? "Not meaningful in --quick mode (tiny sizes, one repetition)." : "");
  std::printf("%s", misses.empty() ? "  every cell meets its targets\n" : misses.c_str());
  std::printf("targets: %d cells, %d over a false-positive target, %d over a time target\n", cells,
              fp_missed, time_missed);

  // Markdown, for the README: 16-byte keys, 10 to 1000 keys per filter, per bits per key.
  std::printf(
      "\nsummary for the README (%d-byte keys, %d-%d keys per filter; ranges over those filter "
      "sizes;\ntimes are compact's as a multiple of LevelDB's, >1 = slower):\n\n",
      cfg.key_len, 10, 1000);
  std::printf(
      "| bits/key | Bloom FP | compact FP | FP compact/Bloom | query present | query absent | "
      "batch | create |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (int bpk : cfg.bits_per_key) {
    Range fb, fc, fr, tm[kNumMeasures];
    for (const Done& d : all) {
      if (d.bpk != bpk || d.key_len != cfg.key_len || d.kpf < 10 || d.kpf > 1000) continue;
      fb.Add(100 * d.r.fp.rate(kLevelDB));
      fc.Add(100 * d.r.fp.rate(kCompact));
      fr.Add(d.r.fp.ratio());
      for (int m = 0; m < kNumMeasures; m++) tm[m].Add(d.r.ratio(static_cast<Measure>(m)));
    }
    if (!fr.any) continue;
    std::printf("| %d | %s%% | %s%% | %s | %sx | %sx | %sx | %sx |\n", bpk,
                fb.Str("%.2f").c_str(), fc.Str(bpk >= 12 ? "%.3f" : "%.2f").c_str(),
                fr.Str("%.2f").c_str(), tm[kPresent].Str("%.2f").c_str(),
                tm[kAbsent].Str("%.2f").c_str(), tm[kBatch].Str("%.2f").c_str(),
                tm[kCreate].Str("%.2f").c_str());
  }
}

void Usage() {
  std::printf(
      "usage: leveldb_bloom_compact_bench [--quick] [--csv FILE] [--reps N] [--min-ms MS]\n"
      "                                   [--keys N] [--fp-probes N] [--fp-count N] [--fp-max N]\n"
      "                                   [--bpk LIST] [--kpf LIST]\n"
      "  --quick       tiny sizes, one repetition (a smoke test: checks still run)\n"
      "  --csv FILE    also write one CSV row per cell to FILE\n"
      "  --reps N      repetitions per cell for the timings (default 9; the median is reported)\n"
      "  --min-ms MS   least duration of one timed measurement of the faster side (default 8)\n"
      "  --keys N      keys per cell for the timings (default 100000; at least one filter)\n"
      "  --fp-probes N absent keys asked of each side per cell, at least (default 1000000)\n"
      "  --fp-count N  ... and more until each side has N false positives (default 2000)\n"
      "  --fp-max N    ... but at most N probes (default 64000000)\n"
      "  --bpk LIST    bits per key, comma-separated (default 6,8,10,12,16)\n"
      "  --kpf LIST    keys per filter, comma-separated (default 10,20,50,100,200,1000)\n");
}

// "6,10,16" as numbers; anything else is a usage error.
std::vector<int> ParseList(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 100000 || (*end != ',' && *end != '\0')) {
      Usage();
      std::exit(2);
    }
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  if (out.empty()) {
    Usage();
    std::exit(2);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  bool probes_set = false, count_set = false, max_set = false, bpk_set = false, kpf_set = false;
  support::parse_args(argc, argv, Usage, [&](const std::string& a, auto value) {
    if (cfg.ParseCommon(a, value)) return true;
    if (a == "--fp-probes") return cfg.fp_min_probes = std::strtoull(value(), nullptr, 10), probes_set = true, true;
    if (a == "--fp-count") return cfg.fp_min_count = std::strtoull(value(), nullptr, 10), count_set = true, true;
    if (a == "--fp-max") return cfg.fp_max_probes = std::strtoull(value(), nullptr, 10), max_set = true, true;
    if (a == "--bpk") return cfg.bits_per_key = ParseList(value()), bpk_set = true, true;
    if (a == "--kpf") return cfg.keys_per_filter = ParseList(value()), kpf_set = true, true;
    return false;
  });
  if (cfg.quick) {
    if (!bpk_set) cfg.bits_per_key = {6, 10, 16};
    if (!kpf_set) cfg.keys_per_filter = {10, 200, 1000};
    cfg.QuickDefaults();
    if (!probes_set) cfg.fp_min_probes = 20000;
    if (!count_set) cfg.fp_min_count = 0;
    if (!max_set) cfg.fp_max_probes = 20000;
  }
  if (cfg.reps < 1) cfg.reps = 1;
  if (cfg.fp_max_probes < cfg.fp_min_probes) cfg.fp_max_probes = cfg.fp_min_probes;

  const uint64_t start = NowNs();
  bench::PrintMachine(
      "leveldb_bloom_compact_bench: compact filters (leveldb-bloom) vs LevelDB 1.23's Bloom "
      "filters, equal bits per key");
  std::printf(
      "method: per cell %zu keys (pseudo-random bytes) in filters of N keys, the same key storage\n"
      "  for both sides. LevelDB = leveldb::NewBloomFilterPolicy(bpk) from libleveldb (CreateFilter\n"
      "  appending to one reserved std::string, KeyMayMatch); compact =\n"
      "  leveldb_bloom_policy_create_compact(bpk) through the C API\n"
      "  (leveldb_bloom_create_filter_slices on LevelDB's Slice array into one buffer,\n"
      "  leveldb_bloom_key_may_match). create: all filters built back to back. present: every key\n"
      "  once, in random order, against the filter holding it; absent: as many other random keys,\n"
      "  N per filter, in random order; query keys copied contiguously in query order (the key is\n"
      "  at hand, its filter anywhere among the cell's); batch: the present keys grouped by\n"
      "  filter, filters in random order, one leveldb_bloom_key_may_match_batch call per filter\n"
      "  against LevelDB's KeyMayMatch key by key. %d repetitions per cell (median), the\n"
      "  two sides' order alternating; each timing >= %.1f ms for the faster side. False\n"
      "  positives: fresh random keys, each asked of a random filter of the cell on both sides:\n"
      "  at least %zu per cell, more until each side has %zu false positives, at most %zu;\n"
      "  +-%% = one standard error of the ratio. Checks: every timing's filter bytes and answers\n"
      "  equal the side's first run, every present key is found on both sides, the filter lengths\n"
      "  are equal, stock LevelDB answers \"may match\" on compact filters, and the compact policy\n"
      "  answers LevelDB's Bloom filters as LevelDB does.\n",
      cfg.keys_total, cfg.reps, cfg.min_ms, cfg.fp_min_probes, cfg.fp_min_count,
      cfg.fp_max_probes);

  FILE* csv = bench::OpenCsv(cfg.csv, WriteCsvHeader);

  std::vector<Done> done;
  for (size_t b = 0; b < cfg.bits_per_key.size(); b++) {
    const int bpk = cfg.bits_per_key[b];
    // Proves (dladdr) that LevelDB's side is libleveldb's and the C API the drop-in's.
    bench::Policies both = bench::MakePolicies(bpk, b == 0);
    delete both.dropin;  // not a side here
    Policies pol{both.stock, leveldb_bloom_policy_create_compact(bpk)};
    if (pol.compact == nullptr) Fail("leveldb_bloom_policy_create_compact(%d) failed", bpk);
    if (leveldb_bloom_policy_format(pol.compact) != LEVELDB_BLOOM_FORMAT_COMPACT) {
      Fail("leveldb_bloom_policy_format says %d for a compact policy",
           leveldb_bloom_policy_format(pol.compact));
    }
    if (leveldb_bloom_policy_bits_per_key(pol.compact) != bpk) {
      Fail("compact policy has %g bits per key, asked %d",
           leveldb_bloom_policy_bits_per_key(pol.compact), bpk);
    }
    PrintTableHeader(bpk, cfg.reps);
    std::vector<int> key_lens{cfg.key_len};
    if (bpk == cfg.extra_bpk) {
      for (int len : cfg.extra_key_lens) {
        if (len != cfg.key_len) key_lens.push_back(len);
      }
    }
    for (int key_len : key_lens) {
      for (int kpf : cfg.keys_per_filter) {
        Cell c;
        MakeCell(&c, key_len, kpf, bpk, std::max<size_t>(cfg.keys_total, 1));
        Result r = RunCell(c, cfg, pol);
        PrintRow(c, r);
        if (csv) WriteCsvRow(csv, c, r, cfg.reps);
        done.push_back(Done{bpk, key_len, kpf, c.bloom_bytes, r});
      }
    }
    leveldb_bloom_policy_destroy(pol.compact);
    delete pol.stock;
  }
  if (csv) std::fclose(csv);

  std::printf(
      "\nall checks passed: %zu cells; every present key found on both sides, answers and filter\n"
      "bytes stable across runs, filter lengths equal, cross-format answers as specified\n",
      done.size());
  PrintSummary(done, cfg);
  std::printf("\npeak memory (ru_maxrss): %.1f MiB; run time %.1f s; load average at end %s\n",
              bench::PeakRssMiB(), (NowNs() - start) / 1e9, bench::LoadAvg().c_str());
  return 0;
}
