/*
 * Use the Rust Bloom filter policy inside a real LevelDB database through
 * LevelDB's C API, and check that tables written with it are read correctly
 * by LevelDB's own built-in Bloom filter, and the other way round.
 *
 *   1. open a fresh DB with the Rust policy, write keys, compact, read back;
 *   2. reopen with leveldb_filterpolicy_create_bloom(10) (same policy name, so
 *      LevelDB uses the Rust-built filters), read everything, write more keys
 *      and compact, so the new tables carry LevelDB-built filters;
 *   3. reopen with the Rust policy and read everything again.
 *
 * A filter that disagreed with LevelDB's bits would make present keys vanish
 * (a false negative) in step 2 or 3. Exit status 0 only if every read is right.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <leveldb/c.h>

#include "leveldb_bloom.h"

#define NUM_KEYS 20000

static int failures = 0;

static void report(const char *what, const char *detail) {
  fprintf(stderr, "FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static void fail(const char *what, const char *detail) {
  report(what, detail);
  failures++;
}

static int check_err(const char *what, char **err) {
  if (*err != NULL) {
    fail(what, *err);
    leveldb_free(*err);
    *err = NULL;
    return 0;
  }
  return 1;
}

/* Absent keys ("rust-00000042~") sort between present ones, so LevelDB asks
   the table's filter about them instead of skipping the table by key range. */
static size_t make_key(char *buf, size_t cap, const char *prefix, int i, int absent) {
  return (size_t)snprintf(buf, cap, "%s%08d%s", prefix, i, absent ? "~" : "");
}

static size_t make_value(char *buf, size_t cap, const char *prefix, int i) {
  return (size_t)snprintf(buf, cap, "value-of-%s%d", prefix, i);
}

static leveldb_t *open_db(const char *path, leveldb_filterpolicy_t *policy, int create) {
  leveldb_options_t *options = leveldb_options_create();
  char *err = NULL;
  leveldb_t *db;
  leveldb_options_set_create_if_missing(options, (uint8_t)create);
  leveldb_options_set_error_if_exists(options, (uint8_t)create);
  leveldb_options_set_filter_policy(options, policy);
  db = leveldb_open(options, path, &err);
  leveldb_options_destroy(options);
  if (!check_err("leveldb_open", &err)) return NULL;
  return db;
}

static void write_keys(leveldb_t *db, const char *prefix, int n) {
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_writebatch_t *batch = leveldb_writebatch_create();
  char *err = NULL;
  char key[64], value[64];
  int i;
  for (i = 0; i < n; i++) {
    size_t klen = make_key(key, sizeof key, prefix, i, 0);
    size_t vlen = make_value(value, sizeof value, prefix, i);
    leveldb_writebatch_put(batch, key, klen, value, vlen);
    if (i % 1000 == 999 || i == n - 1) {
      leveldb_write(db, wo, batch, &err);
      check_err("leveldb_write", &err);
      leveldb_writebatch_clear(batch);
    }
  }
  leveldb_writebatch_destroy(batch);
  leveldb_writeoptions_destroy(wo);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
}

/* Reads the n keys of prefix, or the n absent keys next to them. */
static int read_keys(leveldb_t *db, const char *prefix, int n, int present) {
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  char key[64], value[64];
  int i, bad = 0;
  for (i = 0; i < n; i++) {
    char *err = NULL;
    size_t got_len = 0;
    size_t klen = make_key(key, sizeof key, prefix, i, !present);
    size_t vlen = make_value(value, sizeof value, prefix, i);
    char *got = leveldb_get(db, ro, key, klen, &got_len, &err);
    if (err != NULL) {
      if (bad < 5) report("leveldb_get", err);
      leveldb_free(err);
      bad++;
    } else if (present && (got == NULL || got_len != vlen || memcmp(got, value, vlen) != 0)) {
      if (bad < 5) report(got == NULL ? "present key not found" : "wrong value", key);
      bad++;
    } else if (!present && got != NULL) {
      if (bad < 5) report("absent key found", key);
      bad++;
    }
    leveldb_free(got);
  }
  leveldb_readoptions_destroy(ro);
  failures += bad;
  return bad;
}

static void read_all(leveldb_t *db, int written_by_leveldb, const char *phase) {
  int sets = written_by_leveldb ? 2 : 1;
  int bad = read_keys(db, "rust-", NUM_KEYS, 1) + read_keys(db, "rust-", NUM_KEYS, 0);
  if (written_by_leveldb) {
    bad += read_keys(db, "leveldb-", NUM_KEYS, 1) + read_keys(db, "leveldb-", NUM_KEYS, 0);
  }
  printf("  %-40s %5d present + %5d absent keys read, %d wrong\n", phase, NUM_KEYS * sets,
         NUM_KEYS * sets, bad);
}

int main(void) {
  char dir[] = "/tmp/leveldb_bloom_example.XXXXXX";
  char path[sizeof dir + 8];
  char *err = NULL;
  leveldb_bloom_policy *bloom;
  leveldb_filterpolicy_t *rust_policy, *builtin_policy;
  leveldb_options_t *options;
  leveldb_t *db;

  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  snprintf(path, sizeof path, "%s/db", dir);

  /* Ownership of the Rust policy passes to LevelDB's wrapper; destroying the
     wrapper calls leveldb_bloom_cb_destructor. */
  bloom = leveldb_bloom_policy_create(10);
  if (bloom == NULL) {
    fprintf(stderr, "leveldb_bloom_policy_create(10) failed\n");
    rmdir(dir);
    return 2;
  }
  printf("bloom_with_leveldb: db %s, policy \"%s\"\n", path, leveldb_bloom_policy_name(bloom));
  rust_policy = leveldb_filterpolicy_create(bloom, leveldb_bloom_cb_destructor,
                                            leveldb_bloom_cb_create_filter,
                                            leveldb_bloom_cb_key_may_match, leveldb_bloom_cb_name);
  builtin_policy = leveldb_filterpolicy_create_bloom(10);

  /* 1. Rust policy writes. */
  db = open_db(path, rust_policy, 1);
  if (db != NULL) {
    write_keys(db, "rust-", NUM_KEYS);
    read_all(db, 0, "1. written+read with the Rust policy:");
    leveldb_close(db);
  }

  /* 2. LevelDB's built-in policy reads the Rust filters, then writes. */
  db = open_db(path, builtin_policy, 0);
  if (db != NULL) {
    read_all(db, 0, "2. read with LevelDB's built-in policy:");
    write_keys(db, "leveldb-", NUM_KEYS);
    read_all(db, 1, "2b. + written by LevelDB's policy:");
    leveldb_close(db);
  }

  /* 3. The Rust policy reads tables written by both. */
  db = open_db(path, rust_policy, 0);
  if (db != NULL) {
    read_all(db, 1, "3. reopened with the Rust policy:");
    leveldb_close(db);
  }

  leveldb_filterpolicy_destroy(rust_policy);
  leveldb_filterpolicy_destroy(builtin_policy);

  options = leveldb_options_create();
  leveldb_destroy_db(options, path, &err);
  leveldb_options_destroy(options);
  check_err("leveldb_destroy_db", &err);
  if (rmdir(dir) != 0) {
    perror("rmdir");
    failures++;
  }

  printf("bloom_with_leveldb: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
