/* A disk that fails a read (LD_PRELOAD): every pread of the file whose name ends in
 * LEVELDB_BLOOM_FAULT_FILE fails with EIO, as a failing disk's bad sector does, so that a
 * read error is told apart from damage in the bytes read.
 *
 *   LEVELDB_BLOOM_FAULT_FILE=000005.ldb   the file whose reads fail (the end of its path) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether descriptor fd is open on the file the environment names. */
static int failing(int fd) {
  const char *name = getenv("LEVELDB_BLOOM_FAULT_FILE");
  char link[64], path[4096];
  if (name == NULL || *name == '\0') return 0;
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  size_t len = strlen(name);
  if (n < 0 || (size_t)n < len) return 0;
  path[n] = '\0';
  return strcmp(path + n - len, name) == 0;
}

ssize_t pread64(int fd, void *buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, void *, size_t, off_t);
  if (real == NULL) real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
  if (failing(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd, buf, count, offset);
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
  return pread64(fd, buf, count, offset);
}
