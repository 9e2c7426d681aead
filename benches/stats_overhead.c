/* What counting queries costs: times leveldb_bloom_key_may_match, the C API as users call
 * it, through a policy that counts (leveldb_bloom_policy_counted) and through the same
 * policy uncounted, in one process, alternately. 16-byte keys against 64 filters of 100
 * keys at 10 bits per key: all present, all absent, or each a coin toss (mixed: an order
 * the processor cannot predict, the worst case for a count that branches on the answer);
 * 1, 2, 8 or 32 threads query the same policy and share its counters. Run by
 * scripts/bench stats.
 *
 * Usage: stats_overhead THREADS(1-32) present|absent|mixed [ROUNDS]
 * Prints one CSV line: threads,keys,ns_per_query_uncounted,ns_per_query_counted,overhead_percent
 * (each the best of ROUNDS, default 9, rounds). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leveldb_bloom.h"

#define FILTERS 64
#define KEYS_PER_FILTER 100
#define QUERIES 4000000

static uint8_t filters[FILTERS][256];
static size_t filter_lens[FILTERS];

enum keys { PRESENT, ABSENT, MIXED };
static enum keys keys_kind;

struct job {
  const leveldb_bloom_policy *policy;
  uint64_t thread;
  size_t matches;
};

static void make_key(uint64_t i, char key[16]) {
  uint64_t spread = i * 0x9e3779b97f4a7c15ull;
  memcpy(key, &spread, 8);
  memcpy(key + 8, &i, 8);
}

static void *query_loop(void *arg) {
  struct job *job = arg;
  size_t matches = 0;
  char key[16];
  for (uint64_t q = 0; q < QUERIES; q++) {
    int f = (int)(q % FILTERS);
    /* Present or absent by a coin toss per query: a counter that branched on the answer
     * would pay for every mispredicted answer here, as it would in a program. */
    int present = keys_kind == PRESENT ? 1
                  : keys_kind == ABSENT ? 0
                                        : (int)((q * 0x9e3779b97f4a7c15ull) >> 63);
    uint64_t i = present ? (uint64_t)f * KEYS_PER_FILTER + (q / 2) % KEYS_PER_FILTER
                         : (1ull << 40) | (job->thread << 32) | q;
    make_key(i, key);
    matches += leveldb_bloom_key_may_match(job->policy, key, 16, filters[f], filter_lens[f]);
  }
  job->matches = matches;
  return NULL;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Nanoseconds per query of one round with `threads` threads, each answering QUERIES (the
 * process's wall time per query answered); 0 if a thread did not start
 * or the answers were wrong (every present key must match). */
static double round_ns(const leveldb_bloom_policy *policy, int threads) {
  pthread_t t[32];
  struct job jobs[32];
  int started = 0;
  double start = seconds();
  for (int i = 0; i < threads; i++) {
    jobs[i].policy = policy;
    jobs[i].thread = (uint64_t)i;
    jobs[i].matches = 0;
    if (pthread_create(&t[i], NULL, query_loop, &jobs[i]) != 0) break;
    started++;
  }
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  double elapsed = seconds() - start;
  for (int i = 0; i < started; i++) {
    size_t least = keys_kind == PRESENT ? QUERIES : keys_kind == MIXED ? QUERIES / 2 - QUERIES / 64 : 0;
    if (jobs[i].matches < least) return 0;
  }
  return started == threads ? elapsed * 1e9 / ((double)QUERIES * threads) : 0;
}

int main(int argc, char **argv) {
  int threads = argc > 2 ? atoi(argv[1]) : 0;
  const char *kind = argc > 2 ? argv[2] : "";
  int rounds = argc > 3 ? atoi(argv[3]) : 9;
  keys_kind = strcmp(kind, "present") == 0 ? PRESENT : strcmp(kind, "absent") == 0 ? ABSENT : MIXED;
  if (threads < 1 || threads > 32 || rounds < 1 ||
      (keys_kind == MIXED && strcmp(kind, "mixed") != 0)) {
    fprintf(stderr, "usage: stats_overhead THREADS(1-32) present|absent|mixed [ROUNDS]\n");
    return 2;
  }
  leveldb_bloom_policy *uncounted = leveldb_bloom_policy_create(10);
  leveldb_bloom_policy *counted = leveldb_bloom_policy_counted(uncounted);
  if (uncounted == NULL || counted == NULL) return 1;
  for (int f = 0; f < FILTERS; f++) {
    char keys[KEYS_PER_FILTER][16];
    const char *ptrs[KEYS_PER_FILTER];
    size_t lens[KEYS_PER_FILTER];
    for (int i = 0; i < KEYS_PER_FILTER; i++) {
      make_key((uint64_t)f * KEYS_PER_FILTER + (uint64_t)i, keys[i]);
      ptrs[i] = keys[i];
      lens[i] = 16;
    }
    if (leveldb_bloom_create_filter(uncounted, ptrs, lens, KEYS_PER_FILTER, filters[f],
                                    sizeof filters[f], &filter_lens[f]) != LEVELDB_BLOOM_OK)
      return 1;
  }
  double best_uncounted = 1e9, best_counted = 1e9;
  for (int round = 0; round < rounds; round++) {
    /* Alternating, and each policy first in half the rounds. */
    for (int half = 0; half < 2; half++) {
      int is_counted = (round + half) % 2;
      double ns = round_ns(is_counted ? counted : uncounted, threads);
      if (ns == 0) return 1;
      double *best = is_counted ? &best_counted : &best_uncounted;
      if (ns < *best) *best = ns;
    }
  }
  /* The counted policy answered one round of every thread per round, and counted it. */
  leveldb_bloom_stats s;
  if (leveldb_bloom_policy_stats(counted, &s) != LEVELDB_BLOOM_OK ||
      s.queries != (uint64_t)QUERIES * (uint64_t)threads * (uint64_t)rounds) {
    fprintf(stderr, "stats_overhead: the counted policy's statistics are wrong\n");
    return 1;
  }
  printf("%d,%s,%.3f,%.3f,%+.2f\n", threads, kind, best_uncounted, best_counted,
         (best_counted - best_uncounted) / best_uncounted * 100);
  leveldb_bloom_policy_destroy(counted);
  leveldb_bloom_policy_destroy(uncounted);
  return 0;
}
