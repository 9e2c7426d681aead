/*
 * A LevelDB program that loads LevelDB as Python and Node.js load an extension module: with
 * dlopen, RTLD_LOCAL, so that LevelDB's symbols are outside the global lookup scope. Run
 * with two copies of the drop-in preloaded (a system-wide one and a package's, say), each
 * finds the other's NewBloomFilterPolicy first in lookup order; neither may take the other's
 * for stock's, or each calls the other until the stack runs out.
 *
 * Writes 1000 keys with 10 bits per key Bloom filters, compacts, reads each back and 1000
 * absent keys; exit status 0 only if every answer is right.
 *
 * With FORKS, it then forks that many times while another thread makes and destroys policies
 * without pause, and each child makes a policy of its own: no child may hang. (On a glibc
 * older than 2.35 the drop-in finds such a LevelDB with dl_iterate_phdr, whose lock a fork
 * would leave held in the child if it took one under way.)
 *
 * Usage: local_leveldb LIBLEVELDB DB_DIR [FORKS]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUNCTIONS(X)                                                                       \
  X(void *, leveldb_options_create, (void))                                                \
  X(void *, leveldb_filterpolicy_create_bloom, (int))                                      \
  X(void, leveldb_options_set_filter_policy, (void *, void *))                             \
  X(void, leveldb_options_set_create_if_missing, (void *, unsigned char))                  \
  X(void *, leveldb_open, (const void *, const char *, char **))                           \
  X(void *, leveldb_writeoptions_create, (void))                                           \
  X(void *, leveldb_readoptions_create, (void))                                            \
  X(void, leveldb_put, (void *, const void *, const char *, size_t, const char *, size_t,  \
                        char **))                                                          \
  X(char *, leveldb_get, (void *, const void *, const char *, size_t, size_t *, char **))  \
  X(void, leveldb_compact_range, (void *, const char *, size_t, const char *, size_t))     \
  X(void, leveldb_free, (void *))                                                          \
  X(void, leveldb_close, (void *))                                                         \
  X(void, leveldb_writeoptions_destroy, (void *))                                          \
  X(void, leveldb_readoptions_destroy, (void *))                                           \
  X(void, leveldb_options_destroy, (void *))                                               \
  X(void, leveldb_filterpolicy_destroy, (void *))

#define DECLARE(ret, name, args) static ret(*name) args;
FUNCTIONS(DECLARE)

static void check(char *err, const char *what) {
  if (err != NULL) {
    fprintf(stderr, "local_leveldb: %s: %s\n", what, err);
    exit(1);
  }
}

static atomic_int stop_making;

static void *make_policies(void *unused) {
  (void)unused;
  while (!atomic_load(&stop_making)) leveldb_filterpolicy_destroy(leveldb_filterpolicy_create_bloom(10));
  return NULL;
}

/* Forks `forks` times while a thread makes policies; how many children did not exit 0. */
static int fork_while_making(int forks) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, make_policies, NULL) != 0) return forks;
  int failed = 0;
  for (int i = 0; i < forks; i++) {
    const pid_t child = fork();
    if (child == 0) {
      alarm(20); /* a child that hangs dies, and counts as failed */
      leveldb_filterpolicy_destroy(leveldb_filterpolicy_create_bloom(10));
      _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      failed++;
    }
  }
  atomic_store(&stop_making, 1);
  pthread_join(thread, NULL);
  return failed;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: local_leveldb LIBLEVELDB DB_DIR [FORKS]\n");
    return 2;
  }
  void *leveldb = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (leveldb == NULL) {
    fprintf(stderr, "local_leveldb: %s\n", dlerror());
    return 2;
  }
#define LOOK_UP(ret, name, args)                                       \
  *(void **)&name = dlsym(leveldb, #name);                             \
  if (name == NULL) {                                                  \
    fprintf(stderr, "local_leveldb: %s not in %s\n", #name, argv[1]);  \
    return 2;                                                          \
  }
  FUNCTIONS(LOOK_UP)

  void *options = leveldb_options_create();
  void *policy = leveldb_filterpolicy_create_bloom(10);
  leveldb_options_set_filter_policy(options, policy);
  leveldb_options_set_create_if_missing(options, 1);
  char *err = NULL, key[32];
  void *db = leveldb_open(options, argv[2], &err);
  check(err, "open");
  void *w = leveldb_writeoptions_create(), *r = leveldb_readoptions_create();
  for (int i = 0; i < 1000; i++) {
    leveldb_put(db, w, key, (size_t)snprintf(key, sizeof key, "key%05d", i), "v", 1, &err);
    check(err, "put");
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  int wrong = 0;
  for (int i = 0; i < 2000; i++) {
    size_t length = 0;
    int n = snprintf(key, sizeof key, i < 1000 ? "key%05d" : "key%05d~", i % 1000);
    char *value = leveldb_get(db, r, key, (size_t)n, &length, &err);
    check(err, "get");
    wrong += (i < 1000) != (value != NULL);
    leveldb_free(value);
  }
  leveldb_close(db);
  leveldb_writeoptions_destroy(w);
  leveldb_readoptions_destroy(r);
  leveldb_options_destroy(options);
  leveldb_filterpolicy_destroy(policy);
  if (wrong != 0) {
    fprintf(stderr, "local_leveldb: %d wrong answers\n", wrong);
    return 1;
  }
  const int failed = argc == 4 ? fork_while_making(atoi(argv[3])) : 0;
  if (failed != 0) {
    fprintf(stderr, "local_leveldb: %d of %s children failed or hung\n", failed, argv[3]);
    return 1;
  }
  return 0;
}
