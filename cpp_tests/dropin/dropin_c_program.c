/*
 * An ordinary LevelDB program in C: LevelDB's C API and its built-in Bloom filter,
 * leveldb_filterpolicy_create_bloom(10). It knows nothing of leveldb-bloom (no header, no
 * symbol); run_dropin_proof.cmake runs it stock, with LD_PRELOAD of the drop-in, and linked
 * against the drop-in (shared and static), and compares what it prints and writes.
 *
 * Usage: dropin_c_program DB_DIR          (DB_DIR must not hold a database yet)
 *        dropin_c_program --read DB_DIR   (a database the first form wrote, here or on
 *                                          another system: scripts/windows)
 *
 * Runs the workload of workload.h, reads every key and WL_ABSENT_LOOKUPS absent keys,
 * iterates over the database and prints counts and an FNV-1a digest of every key/value
 * pair. Any wrong answer (a missing key, a wrong value, an absent key found) is an error.
 * With --read it only reads, and prints the same counts (no puts, no deletes). Tables are
 * written uncompressed, so that a LevelDB built without Snappy (Windows builds have none)
 * reads them.
 *
 * With DROPIN_WORKLOAD_LIBRARY defined it is a library instead, whose main is
 * dropin_workload_main (bundled/: loaded by a host program after its LevelDB).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

#include "workload.h"

#ifdef DROPIN_WORKLOAD_LIBRARY
int dropin_workload_main(int argc, char **argv);
#define main dropin_workload_main
#endif

static void check(char *err, const char *what) {
  if (err != NULL) {
    fprintf(stderr, "dropin_c_program: %s: %s\n", what, err);
    leveldb_free(err);
    exit(1);
  }
}

static void fail(const char *what, uint32_t i) {
  fprintf(stderr, "dropin_c_program: %s (index %lu)\n", what, (unsigned long)i);
  exit(1);
}

static unsigned long policies_created = 0;
static unsigned long n_puts = 0, n_deletes = 0;

static void put(leveldb_t *db, const leveldb_writeoptions_t *wo, uint32_t i, uint32_t v) {
  char key[WL_KEY_MAX], value[WL_VALUE_MAX];
  char *err = NULL;
  const size_t klen = wl_key(i, key), vlen = wl_value(i, v, value);
  leveldb_put(db, wo, key, klen, value, vlen, &err);
  check(err, "put");
  n_puts++;
}

static void del(leveldb_t *db, const leveldb_writeoptions_t *wo, uint32_t i) {
  char key[WL_KEY_MAX];
  char *err = NULL;
  const size_t klen = wl_key(i, key);
  leveldb_delete(db, wo, key, klen, &err);
  check(err, "delete");
  n_deletes++;
}

/* Opens DB_DIR with a new Bloom policy; *policy receives it (destroy after closing). */
static leveldb_t *open_db(const char *dir, int create, leveldb_filterpolicy_t **policy) {
  leveldb_options_t *options = leveldb_options_create();
  leveldb_t *db;
  char *err = NULL;
  *policy = leveldb_filterpolicy_create_bloom(WL_BITS_PER_KEY);
  policies_created++;
  leveldb_options_set_filter_policy(options, *policy);
  leveldb_options_set_create_if_missing(options, (unsigned char)create);
  leveldb_options_set_error_if_exists(options, (unsigned char)create);
  leveldb_options_set_write_buffer_size(options, WL_WRITE_BUFFER_SIZE);
  leveldb_options_set_compression(options, leveldb_no_compression);
  db = leveldb_open(options, dir, &err);
  check(err, "open");
  leveldb_options_destroy(options);
  return db;
}

int main(int argc, char **argv) {
  leveldb_writeoptions_t *wo;
  leveldb_readoptions_t *ro;
  leveldb_filterpolicy_t *policy;
  leveldb_iterator_t *it;
  leveldb_t *db;
  char key[WL_KEY_MAX], value[WL_VALUE_MAX];
  unsigned long live = 0, found = 0, deleted_lookups = 0, pairs = 0;
  uint64_t digest = WL_FNV_INIT;
  uint32_t i, j;
  const int read_only = argc == 3 && strcmp(argv[1], "--read") == 0;
  const char *dir = argv[argc - 1];

  if (argc != 2 && !read_only) {
    fprintf(stderr, "usage: %s [--read] DB_DIR\n", argv[0]);
    return 2;
  }
  wo = leveldb_writeoptions_create();
  ro = leveldb_readoptions_create();

  if (read_only) {
    db = open_db(dir, 0, &policy);
    goto read_back;
  }

  /* Phase 1. */
  db = open_db(dir, 1, &policy);
  for (i = 0; i < WL_PHASE1_KEYS; i++) put(db, wo, i, 1);
  for (i = 0; i < WL_PHASE1_KEYS; i += 3) put(db, wo, i, 2);
  for (i = 5; i < WL_PHASE1_KEYS; i += 10) del(db, wo, i);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  leveldb_close(db);
  leveldb_filterpolicy_destroy(policy);

  /* Phase 2. */
  db = open_db(dir, 0, &policy);
  for (i = WL_PHASE1_KEYS; i < WL_KEYS; i++) put(db, wo, i, 1);
  for (i = 0; i < WL_KEYS; i += 7) put(db, wo, i, 3);
  for (i = 6; i < WL_KEYS; i += 13) del(db, wo, i);
  leveldb_compact_range(db, NULL, 0, NULL, 0);

read_back:
  /* Every key, present or deleted. */
  for (i = 0; i < WL_KEYS; i++) {
    const uint32_t v = wl_final_version(i);
    const size_t klen = wl_key(i, key);
    size_t got_len = 0;
    char *err = NULL;
    char *got = leveldb_get(db, ro, key, klen, &got_len, &err);
    check(err, "get");
    if (v == 0) {
      deleted_lookups++;
      if (got != NULL) fail("deleted key found", i);
    } else {
      const size_t vlen = wl_value(i, v, value);
      live++;
      /* glibc's malloc(0) is not NULL, so an empty value comes back non-NULL. */
      if (got == NULL) fail("key not found", i);
      if (got_len != vlen || memcmp(got, value, vlen) != 0) fail("wrong value", i);
      found++;
    }
    leveldb_free(got);
  }
  /* Keys never written. */
  for (j = 0; j < WL_ABSENT_LOOKUPS; j++) {
    const size_t klen = wl_absent_key(j, key);
    size_t got_len = 0;
    char *err = NULL;
    char *got = leveldb_get(db, ro, key, klen, &got_len, &err);
    check(err, "get");
    if (got != NULL) fail("absent key found", j);
  }
  /* The whole database, in order. */
  it = leveldb_create_iterator(db, ro);
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t klen = 0, vlen = 0;
    const char *k = leveldb_iter_key(it, &klen);
    const char *v = leveldb_iter_value(it, &vlen);
    digest = wl_fnv(digest, k, klen);
    digest = wl_fnv(digest, v, vlen);
    pairs++;
  }
  {
    char *err = NULL;
    leveldb_iter_get_error(it, &err);
    check(err, "iterator");
  }
  leveldb_iter_destroy(it);
  if (pairs != live) fail("iteration count differs from the live keys", (uint32_t)pairs);

  leveldb_close(db);
  leveldb_filterpolicy_destroy(policy);
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);

  printf("bloom_policies_created=%lu\n", policies_created);
  printf("keys=%lu\n", (unsigned long)WL_KEYS);
  printf("puts=%lu\n", n_puts);
  printf("deletes=%lu\n", n_deletes);
  printf("live_keys=%lu\n", live);
  printf("present_lookups=%lu\n", found);
  printf("absent_lookups=%lu\n", deleted_lookups + (unsigned long)WL_ABSENT_LOOKUPS);
  printf("pairs=%lu\n", pairs);
  printf("digest=%016llx\n", (unsigned long long)digest);
  return 0;
}
