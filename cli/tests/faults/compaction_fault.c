/* Faults injected into LevelDB under the command (LD_PRELOAD): its whole-range compaction
 * (leveldb_compact_range) loses a record, or the process is killed right after it. What
 * LevelDB's own code could do wrong, made to happen, so that the command's proof of its
 * result and its way back are tested against it.
 *
 *   LEVELDB_BLOOM_FAULT=lose         deletes the database's first record, then compacts
 *   LEVELDB_BLOOM_FAULT=kill         compacts, then SIGKILL
 *   LEVELDB_BLOOM_FAULT=lose-and-let-in  as lose, and once the command closes the database,
 *                                    "another process" (here, the same one: the files are
 *                                    what counts) opens the database named by
 *                                    LEVELDB_BLOOM_FAULT_DB and writes a record */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

static void lose_first_record(leveldb_t *db) {
  leveldb_readoptions_t *read = leveldb_readoptions_create();
  leveldb_iterator_t *it = leveldb_create_iterator(db, read);
  leveldb_iter_seek_to_first(it);
  if (leveldb_iter_valid(it)) {
    size_t len;
    const char *key = leveldb_iter_key(it, &len);
    char *copy = malloc(len + 1);
    memcpy(copy, key, len);
    leveldb_writeoptions_t *write = leveldb_writeoptions_create();
    char *err = NULL;
    leveldb_delete(db, write, copy, len, &err);
    leveldb_free(err);
    leveldb_writeoptions_destroy(write);
    free(copy);
  }
  leveldb_iter_destroy(it);
  leveldb_readoptions_destroy(read);
}

void leveldb_compact_range(leveldb_t *db, const char *start, size_t start_len,
                           const char *limit, size_t limit_len) {
  void (*real)(leveldb_t *, const char *, size_t, const char *, size_t) =
      (void (*)(leveldb_t *, const char *, size_t, const char *, size_t))dlsym(
          RTLD_NEXT, "leveldb_compact_range");
  const char *fault = getenv("LEVELDB_BLOOM_FAULT");
  if (fault != NULL && strncmp(fault, "lose", 4) == 0) lose_first_record(db);
  real(db, start, start_len, limit, limit_len);
  if (fault != NULL && strcmp(fault, "kill") == 0) raise(SIGKILL);
}

void leveldb_close(leveldb_t *db) {
  void (*real)(leveldb_t *) = (void (*)(leveldb_t *))dlsym(RTLD_NEXT, "leveldb_close");
  real(db);
  const char *fault = getenv("LEVELDB_BLOOM_FAULT");
  const char *name = getenv("LEVELDB_BLOOM_FAULT_DB");
  static int once;
  if (fault == NULL || strcmp(fault, "lose-and-let-in") != 0 || name == NULL || once++) return;
  leveldb_options_t *options = leveldb_options_create();
  char *err = NULL;
  leveldb_t *other = leveldb_open(options, name, &err);
  if (other != NULL) {
    leveldb_writeoptions_t *write = leveldb_writeoptions_create();
    leveldb_put(other, write, "written by another", 18, "process", 7, &err);
    leveldb_writeoptions_destroy(write);
    real(other);
  }
  leveldb_free(err);
  leveldb_options_destroy(options);
}
