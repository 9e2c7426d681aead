/* Faults injected into LevelDB under the command (LD_PRELOAD): its whole-range compaction
 * (leveldb_compact_range) loses a record, or the process is killed right after it. What
 * LevelDB's own code could do wrong, made to happen, so that the command's proof of its
 * result and its way back are tested against it.
 *
 *   LEVELDB_BLOOM_FAULT=lose   deletes the database's first record, then compacts
 *   LEVELDB_BLOOM_FAULT=kill   compacts, then SIGKILL */
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
  if (fault != NULL && strcmp(fault, "lose") == 0) lose_first_record(db);
  real(db, start, start_len, limit, limit_len);
  if (fault != NULL && strcmp(fault, "kill") == 0) raise(SIGKILL);
}
