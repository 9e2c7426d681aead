/* What counting queries costs: times leveldb_bloom_key_may_match, the C API as users call
 * it, on 16-byte keys (half present, half absent, in an order the processor cannot
 * predict) against 64 filters of 100 keys at 10 bits per key, with 1 and 2 threads querying the same policy. scripts/bench stats runs it
 * against the library as shipped and against a build without query counting, alternately,
 * and compares. Prints one CSV line: threads,ns_per_query. */
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
static leveldb_bloom_policy *policy;

static void make_key(uint64_t i, char key[16]) {
  uint64_t spread = i * 0x9e3779b97f4a7c15ull;
  memcpy(key, &spread, 8);
  memcpy(key + 8, &i, 8);
}

static void *query_loop(void *arg) {
  uint64_t thread = (uint64_t)(uintptr_t)arg;
  size_t matches = 0;
  char key[16];
  for (uint64_t q = 0; q < QUERIES; q++) {
    int f = (int)(q % FILTERS);
    /* Present or absent by a coin toss per query: a counter that branched on the answer
     * would pay for every mispredicted answer here, as it would in a program. */
    int present = (int)((q * 0x9e3779b97f4a7c15ull) >> 63);
    uint64_t i = present ? (uint64_t)f * KEYS_PER_FILTER + (q / 2) % KEYS_PER_FILTER
                         : (1ull << 40) | (thread << 32) | q;
    make_key(i, key);
    matches += leveldb_bloom_key_may_match(policy, key, 16, filters[f], filter_lens[f]);
  }
  return (void *)(uintptr_t)matches;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 2) return 2;
  policy = leveldb_bloom_policy_create(10);
  for (int f = 0; f < FILTERS; f++) {
    char keys[KEYS_PER_FILTER][16];
    const char *ptrs[KEYS_PER_FILTER];
    size_t lens[KEYS_PER_FILTER];
    for (int i = 0; i < KEYS_PER_FILTER; i++) {
      make_key((uint64_t)f * KEYS_PER_FILTER + (uint64_t)i, keys[i]);
      ptrs[i] = keys[i];
      lens[i] = 16;
    }
    if (leveldb_bloom_create_filter(policy, ptrs, lens, KEYS_PER_FILTER, filters[f],
                                    sizeof filters[f], &filter_lens[f]) != LEVELDB_BLOOM_OK)
      return 1;
  }
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    pthread_t t[2];
    double start = seconds();
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, query_loop, (void *)(uintptr_t)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double elapsed = seconds() - start;
    if (elapsed < best) best = elapsed;
  }
  printf("%d,%.3f\n", threads, best * 1e9 / QUERIES);
  leveldb_bloom_policy_destroy(policy);
  return 0;
}
