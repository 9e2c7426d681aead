/*
 * An ordinary LevelDB program in C (LevelDB's C API, leveldb_filterpolicy_create_bloom(10))
 * that confines itself, as a sandboxed service does, to an allowlist of system calls before
 * it touches LevelDB: the calls the same program makes without the drop-in (run_seccomp.sh
 * takes them from strace). The drop-in must then make no call stock does not, from the first
 * policy to its statistics at exit.
 *
 * Usage: seccomp_program ALLOWLIST kill|errno DB_DIR   (a call outside the list kills the
 *                                                       process, or fails with EPERM)
 *        seccomp_program - none DB_DIR                (no filter)
 *
 * Prints counts of the keys it found. (It asks nothing else of the system: its own calls are
 * the list's.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seccomp.h>

#include "c_api_db.h"

static void confine(const char *allowlist, const char *mode) {
  if (strcmp(mode, "none") == 0) return;
  scmp_filter_ctx ctx = seccomp_init(strcmp(mode, "kill") == 0 ? SCMP_ACT_KILL_PROCESS
                                                                : SCMP_ACT_ERRNO(EPERM));
  FILE *list = fopen(allowlist, "r");
  if (ctx == NULL || list == NULL) {
    perror("seccomp_program: the allowlist");
    exit(2);
  }
  char name[128];
  while (fscanf(list, "%127s", name) == 1) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) != 0) {
      fprintf(stderr, "seccomp_program: cannot allow %s\n", name);
      exit(2);
    }
  }
  fclose(list);
  if (seccomp_load(ctx) != 0) {
    fprintf(stderr, "seccomp_program: seccomp_load failed\n");
    exit(2);
  }
  seccomp_release(ctx);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: seccomp_program ALLOWLIST kill|errno|none DB_DIR\n");
    return 2;
  }
  confine(argv[1], argv[2]);
  struct c_api_db d;
  char *err = NULL, key[32];
  leveldb_t *db = c_api_db_open(&d, argv[3], &err);
  if (db == NULL) {
    fprintf(stderr, "seccomp_program: %s\n", err);
    return 3;
  }
  for (int i = 0; i < 20000 && err == NULL; i++) {
    leveldb_put(db, d.write, key, (size_t)snprintf(key, sizeof key, "key%08d", 2 * i), "v", 1,
                &err);
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  int present = 0, absent = 0;
  for (int i = 0; i < 40000 && err == NULL; i++) {
    size_t len = 0;
    char *value = leveldb_get(db, d.read, key, (size_t)snprintf(key, sizeof key, "key%08d", i),
                              &len, &err);
    if (value != NULL) {
      present++;
      leveldb_free(value);
    } else {
      absent++;
    }
  }
  if (err != NULL) {
    fprintf(stderr, "seccomp_program: %s\n", err);
    return 3;
  }
  c_api_db_close(&d);
  printf("present=%d absent=%d\n", present, absent);
  return 0;
}
