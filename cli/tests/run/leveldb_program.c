/* An ordinary LevelDB program (it knows nothing of leveldb-bloom), for `leveldb-bloom run`'s
 * tests: writes 20,000 keys with 10 bits per key Bloom filters, compacts, asks for 20,000
 * absent keys inside the tables' key range, prints how many it found, forks the children
 * its third argument asks for (each exits at once, through exit()), and exits with the
 * status its second argument names. Given a fourth, it first changes into that directory,
 * as a daemon does once started.
 *
 *   leveldb_program DB_DIR [STATUS [CHILDREN [CHDIR]]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include <leveldb/c.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (argc > 4 && chdir(argv[4]) != 0) return 4;
  leveldb_options_t *options = leveldb_options_create();
  leveldb_filterpolicy_t *policy = leveldb_filterpolicy_create_bloom(10);
  leveldb_options_set_filter_policy(options, policy);
  leveldb_options_set_create_if_missing(options, 1);
  char *err = NULL, key[32];
  leveldb_t *db = leveldb_open(options, argv[1], &err);
  if (db == NULL) {
    fprintf(stderr, "%s\n", err);
    return 3;
  }
  leveldb_writeoptions_t *write = leveldb_writeoptions_create();
  for (int i = 0; i < 20000 && err == NULL; i++)
    leveldb_put(db, write, key, snprintf(key, sizeof key, "key%08d", 2 * i), "v", 1, &err);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  leveldb_readoptions_t *read = leveldb_readoptions_create();
  int found = 0;
  for (int i = 0; i < 20000 && err == NULL; i++) {
    size_t len;
    char *value = leveldb_get(db, read, key, snprintf(key, sizeof key, "key%08d", 2 * i + 1),
                              &len, &err);
    if (value != NULL) found++;
    free(value);
  }
  leveldb_close(db);
  leveldb_readoptions_destroy(read);
  leveldb_writeoptions_destroy(write);
  leveldb_options_destroy(options);
  leveldb_filterpolicy_destroy(policy);
  if (err != NULL) {
    fprintf(stderr, "%s\n", err);
    return 3;
  }
  printf("found %d absent keys\n", found);
  fflush(stdout);
  for (int c = 0; c < (argc > 3 ? atoi(argv[3]) : 0); c++)
    if (fork() == 0) exit(0);
  while (wait(NULL) > 0) {
  }
  return argc > 2 ? atoi(argv[2]) : 0;
}
