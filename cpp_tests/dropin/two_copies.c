/*
 * A LevelDB program that links libleveldb_bloom.so (a second copy of the library, first in
 * the symbol lookup order) and the drop-in, which serves leveldb_filterpolicy_create_bloom.
 * The drop-in's C++ object must call its own copy of the C API, never the other copy (which
 * would be handed the drop-in's objects).
 *
 * How it tells: with LEVELDB_BLOOM_SIMD set to a value that is not one, each copy of the
 * library says so once on standard error, when its code first builds a filter. The program
 * builds one through the other copy, then has LevelDB build its tables through the drop-in:
 * two lines if the drop-in's object ran its own copy, one if its calls went to the other.
 *
 * Usage: two_copies DB_DIR
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <leveldb/c.h>

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
  setenv("LEVELDB_BLOOM_SIMD", "not-a-level", 1);
  /* Standard error into a file, to count the lines the copies write. */
  char said_path[4096];
  snprintf(said_path, sizeof said_path, "%s.stderr", argv[1]);
  const int said = open(said_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  const int saved_stderr = dup(2);
  if (said < 0 || saved_stderr < 0 || dup2(said, 2) < 0) return 1;

  /* The other copy builds a filter. */
  leveldb_bloom_policy *direct = leveldb_bloom_policy_create(10);
  const char *one_key = "k";
  const size_t one_len = 1;
  uint8_t filter[64];
  size_t filter_len = 0;
  if (leveldb_bloom_create_filter(direct, &one_key, &one_len, 1, filter, sizeof filter,
                                  &filter_len) != LEVELDB_BLOOM_OK) return 1;
  leveldb_bloom_policy_destroy(direct);
  leveldb_filterpolicy_t *policy = leveldb_filterpolicy_create_bloom(10);
  leveldb_options_t *options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  leveldb_options_set_filter_policy(options, policy);
  char *err = NULL;
  leveldb_t *db = leveldb_open(options, argv[1], &err);
  check(err, "open");
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  char key[32];
  for (int i = 0; i < 2000; i++) {
    snprintf(key, sizeof key, "key%06d", 2 * i);
    leveldb_put(db, wo, key, strlen(key), "v", 1, &err);
    check(err, "put");
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  for (int i = 0; i < 4000; i++) {
    size_t len = 0;
    snprintf(key, sizeof key, "key%06d", i);
    char *value = leveldb_get(db, ro, key, strlen(key), &len, &err);
    check(err, "get");
    if ((value != NULL) != (i % 2 == 0)) {
      fprintf(stderr, "two_copies: key %d read wrongly\n", i);
      return 1;
    }
    leveldb_free(value);
  }
  leveldb_close(db);
  leveldb_filterpolicy_destroy(policy);
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);
  leveldb_options_destroy(options);

  /* Standard error back; count what the copies said. */
  fflush(stderr);
  dup2(saved_stderr, 2);
  char text[8192];
  const ssize_t n = pread(said, text, sizeof text - 1, 0);
  close(said);
  text[n > 0 ? n : 0] = '\0';
  int lines = 0;
  for (const char *p = text; (p = strstr(p, "LEVELDB_BLOOM_SIMD")) != NULL; p++) lines++;

  /* Two copies must be loaded, or the test proves nothing. */
  void *dropin = dlopen("libleveldb_bloom_dropin.so", RTLD_NOW | RTLD_NOLOAD);
  void *dropin_version = dropin ? dlsym(dropin, "leveldb_bloom_version") : NULL;
  uint64_t (*served)(void) =
      dropin ? (uint64_t(*)(void))dlsym(dropin, "leveldb_bloom_dropin_policies_created") : NULL;
  if (dropin_version == NULL || dropin_version == (void *)leveldb_bloom_version || served == NULL) {
    fprintf(stderr, "two_copies: two copies of the library are not loaded\n");
    return 1;
  }
  printf("drop-in policies served: %llu; copies that built filters: %d\n%s",
         (unsigned long long)served(), lines, text);
  if (served() == 0) return 1;
  if (lines != 2) {
    fprintf(stderr, "two_copies: %d copies built filters: the drop-in's object %s\n", lines,
            lines == 1 ? "called the other copy" : "?");
    return 1;
  }
  return 0;
}
