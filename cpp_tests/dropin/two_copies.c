/*
 * A LevelDB program that links libleveldb_bloom.so (a second copy of the library, first in
 * the symbol lookup order) and the drop-in, which serves leveldb_filterpolicy_create_bloom.
 * The drop-in's C++ object must call its own copy of the C API, never the other copy (which
 * would be handed the drop-in's objects).
 *
 * How it tells: each copy counts into its own process-wide statistics, in the code that
 * runs. With LEVELDB_BLOOM_STATS_FILE set (the drop-in's policies then count), the program
 * builds one counted filter and answers one query through the other copy, then has LevelDB
 * build and query its tables through the drop-in: the other copy's statistics must show
 * exactly its own filter and query, the drop-in's copy's every other one.
 *
 * Usage: LEVELDB_BLOOM_STATS_FILE=... two_copies DB_DIR
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api_db.h"
#include "leveldb_bloom.h"

static void check(char *err, const char *what) {
  if (err != NULL) {
    fprintf(stderr, "two_copies: %s: %s\n", what, err);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: two_copies DB_DIR\n");
    return 2;
  }
  if (getenv("LEVELDB_BLOOM_STATS_FILE") == NULL) {
    fprintf(stderr, "two_copies: LEVELDB_BLOOM_STATS_FILE must be set\n");
    return 2;
  }
  /* The other copy builds a filter and answers a query, counted. */
  leveldb_bloom_policy *plain = leveldb_bloom_policy_create(10);
  leveldb_bloom_policy *direct = leveldb_bloom_policy_counted(plain);
  leveldb_bloom_policy_destroy(plain);
  const char *one_key = "k";
  const size_t one_len = 1;
  uint8_t filter[64];
  size_t filter_len = 0;
  if (leveldb_bloom_create_filter(direct, &one_key, &one_len, 1, filter, sizeof filter,
                                  &filter_len) != LEVELDB_BLOOM_OK) return 1;
  if (!leveldb_bloom_key_may_match(direct, one_key, one_len, filter, filter_len)) return 1;
  leveldb_bloom_policy_destroy(direct);
  struct c_api_db d;
  char *err = NULL;
  leveldb_t *db = c_api_db_open(&d, argv[1], &err);
  check(err, "open");
  char key[32];
  for (int i = 0; i < 2000; i++) {
    snprintf(key, sizeof key, "key%06d", 2 * i);
    leveldb_put(db, d.write, key, strlen(key), "v", 1, &err);
    check(err, "put");
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  for (int i = 0; i < 4000; i++) {
    size_t len = 0;
    snprintf(key, sizeof key, "key%06d", i);
    char *value = leveldb_get(db, d.read, key, strlen(key), &len, &err);
    check(err, "get");
    if ((value != NULL) != (i % 2 == 0)) {
      fprintf(stderr, "two_copies: key %d read wrongly\n", i);
      return 1;
    }
    leveldb_free(value);
  }
  c_api_db_close(&d);

  /* Two copies must be loaded, or the test proves nothing. */
  void *dropin = dlopen("libleveldb_bloom_dropin.so", RTLD_NOW | RTLD_NOLOAD);
  void *dropin_version = dropin ? dlsym(dropin, "leveldb_bloom_version") : NULL;
  uint64_t (*served)(void) =
      dropin ? (uint64_t(*)(void))dlsym(dropin, "leveldb_bloom_dropin_policies_created") : NULL;
  if (dropin_version == NULL || dropin_version == (void *)leveldb_bloom_version || served == NULL) {
    fprintf(stderr, "two_copies: two copies of the library are not loaded\n");
    return 1;
  }
  int (*dropin_stats)(leveldb_bloom_stats *) =
      (int (*)(leveldb_bloom_stats *))dlsym(dropin, "leveldb_bloom_global_stats");
  leveldb_bloom_stats mine, theirs;
  if (dropin_stats == NULL || leveldb_bloom_global_stats(&mine) != LEVELDB_BLOOM_OK ||
      dropin_stats(&theirs) != LEVELDB_BLOOM_OK) return 1;
  printf("drop-in policies served: %llu\n"
         "the program's copy: %llu filters, %llu queries\n"
         "the drop-in's copy: %llu filters, %llu queries\n",
         (unsigned long long)served(), (unsigned long long)mine.filters_built,
         (unsigned long long)mine.queries, (unsigned long long)theirs.filters_built,
         (unsigned long long)theirs.queries);
  if (served() == 0) return 1;
  if (mine.filters_built != 1 || mine.queries != 1 || theirs.filters_built == 0 ||
      theirs.queries == 0) {
    fprintf(stderr, "two_copies: the drop-in's object called the other copy\n");
    return 1;
  }
  return 0;
}
