/* A power cut, preloaded (LD_PRELOAD) into a command that writes a database: LevelDB's fault
 * model (db/fault_injection_test.cc: data no fsync made durable is lost, and so are directory
 * entries no fsync of their directory followed), made strict. The shim never changes what
 * the command does until the cut; it records what a power cut would keep of the directory
 * tree POWER_CUT_DIR, and at the cut writes that tree to POWER_CUT_OUT and ends the process.
 *
 * What is durable:
 *   - a file's data as it was at its last successful fsync or fdatasync (through any of its
 *     descriptors), or when the shim was loaded; nothing of a file created since and never
 *     synced;
 *   - POWER_CUT_MODEL=synced (the default): each directory's entries as they were at its last
 *     fsync, or when the shim was loaded (renames, links, unlinks and creations since are
 *     undone); POWER_CUT_MODEL=ordered: every directory's entries as they are (a file system
 *     that commits its metadata in order, as ext4's journal does), file data still as synced.
 * Files are told apart by device, inode and a generation the shim counts on each creation,
 * so that a new file that reuses a deleted one's inode is not taken for it. Hard links stay
 * links in the image.
 *
 * What it is told:
 *   POWER_CUT_DIR=path         the tree (an absolute path, the database directory)
 *   POWER_CUT_OUT=path         where the image goes (must not exist)
 *   POWER_CUT_AT=N             cut just before the N-th operation (1 is the first), or at exit
 *                              if the command makes fewer; POWER_CUT_AT=exit: at exit
 *   POWER_CUT_COUNT=file       write the number of operations made there at exit
 *   POWER_CUT_FAIL_SYNC=N      the N-th sync fails with EIO: nothing of it is durable, and
 *                              nothing more of that file or directory ever is (the kernel
 *                              drops the dirty pages of a failed writeback)
 * The operations, the points a cut can fall between: every sync of a file or directory under
 * the tree, and, in the ordered model, every creation, rename, link, unlink, mkdir, rmdir and
 * truncation there. A cut ends the process with status 99 (at exit, the command's own). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define CUT_STATUS 99

struct key {
  dev_t dev;
  ino_t ino;
  unsigned gen;
};

struct content {
  struct key key;
  char *data;
  size_t len;
  int frozen;
};

struct entry {
  char *name;
  unsigned char type; /* DT_REG, DT_DIR, DT_LNK */
  struct key key;
  char *target; /* a symlink's */
};

struct listing {
  struct key key;
  struct entry *entries;
  size_t n;
  int frozen;
};

struct generation {
  dev_t dev;
  ino_t ino;
  unsigned gen;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char root[PATH_MAX];
static size_t root_len;
static int active, ordered;
static long cut_at = -1; /* -1: never; 0: at exit */
static long fail_sync = -1;
static long ops, syncs;
static const char *out_dir, *count_file;
static struct content *contents;
static size_t n_contents;
static struct listing *listings;
static size_t n_listings;
static struct generation *generations;
static size_t n_generations;

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_link)(const char *, const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_rmdir)(const char *);
static int (*real_ftruncate)(int, off_t);
static int (*real_truncate)(const char *, off_t);
static FILE *(*real_fopen)(const char *, const char *);

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) abort();
  return p;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (p == NULL) abort();
  return p;
}

static unsigned generation_of(dev_t dev, ino_t ino) {
  for (size_t i = 0; i < n_generations; i++)
    if (generations[i].dev == dev && generations[i].ino == ino) return generations[i].gen;
  return 1;
}

/* A new file or directory has the inode (dev, ino): a generation of its own. */
static void born(dev_t dev, ino_t ino) {
  for (size_t i = 0; i < n_generations; i++)
    if (generations[i].dev == dev && generations[i].ino == ino) {
      generations[i].gen++;
      return;
    }
  generations = xrealloc(generations, (n_generations + 1) * sizeof *generations);
  generations[n_generations++] = (struct generation){dev, ino, 2};
}

static struct key key_of(const struct stat *st) {
  return (struct key){st->st_dev, st->st_ino, generation_of(st->st_dev, st->st_ino)};
}

static int same(struct key a, struct key b) {
  return a.dev == b.dev && a.ino == b.ino && a.gen == b.gen;
}

static struct content *content_of(struct key key) {
  for (size_t i = 0; i < n_contents; i++)
    if (same(contents[i].key, key)) return &contents[i];
  return NULL;
}

static struct listing *listing_of(struct key key) {
  for (size_t i = 0; i < n_listings; i++)
    if (same(listings[i].key, key)) return &listings[i];
  return NULL;
}

/* Whether the absolute path `path` lies in the tree. */
static int in_tree(const char *path) {
  return strncmp(path, root, root_len) == 0 && (path[root_len] == '/' || path[root_len] == 0);
}

/* The absolute path of `path` as seen from `dirfd` (its directory's path, not resolved). */
static void absolute(int dirfd, const char *path, char *out) {
  if (path[0] == '/') {
    snprintf(out, PATH_MAX, "%s", path);
    return;
  }
  char base[PATH_MAX / 2] = "";
  if (dirfd == AT_FDCWD) {
    if (getcwd(base, sizeof base) == NULL) base[0] = 0;
  } else {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, base, sizeof base - 1);
    base[n > 0 ? n : 0] = 0;
  }
  snprintf(out, PATH_MAX, "%.2047s/%.2047s", base, path);
}

/* The path a descriptor is open on. */
static int fd_path(int fd, char *out) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, PATH_MAX - 1);
  if (n <= 0) return -1;
  out[n] = 0;
  return 0;
}

static void read_all(int fd, char **data, size_t *len) {
  size_t cap = 1 << 16;
  *data = xmalloc(cap);
  *len = 0;
  for (;;) {
    if (*len == cap) *data = xrealloc(*data, cap *= 2);
    ssize_t n = pread(fd, *data + *len, cap - *len, (off_t)*len);
    if (n <= 0) break;
    *len += (size_t)n;
  }
}

/* Records the data of the file `st` describes, read through `path`, as durable. */
static void keep_content(const char *path, const struct stat *st) {
  struct key key = key_of(st);
  struct content *c = content_of(key);
  if (c != NULL && c->frozen) return;
  int fd = real_open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char *data;
  size_t len;
  read_all(fd, &data, &len);
  close(fd);
  if (c == NULL) {
    contents = xrealloc(contents, (n_contents + 1) * sizeof *contents);
    c = &contents[n_contents++];
    *c = (struct content){key, NULL, 0, 0};
  }
  free(c->data);
  c->data = data;
  c->len = len;
}

/* The entries of the directory at `path` now. */
static void list_dir(const char *path, struct entry **entries, size_t *n) {
  *entries = NULL;
  *n = 0;
  int fd = real_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR *dir = fdopendir(fd);
  if (dir == NULL) {
    close(fd);
    return;
  }
  struct dirent *d;
  while ((d = readdir(dir)) != NULL) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    struct entry e = {strdup(d->d_name), 0, key_of(&st), NULL};
    if (S_ISREG(st.st_mode)) {
      e.type = DT_REG;
    } else if (S_ISDIR(st.st_mode)) {
      e.type = DT_DIR;
    } else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t len = readlinkat(dirfd(dir), d->d_name, target, sizeof target - 1);
      target[len > 0 ? len : 0] = 0;
      e.type = DT_LNK;
      e.target = strdup(target);
    } else {
      free(e.name);
      continue; /* a FIFO or a device: not the tree's data */
    }
    *entries = xrealloc(*entries, (*n + 1) * sizeof **entries);
    (*entries)[(*n)++] = e;
  }
  closedir(dir);
}

static void free_entries(struct entry *entries, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(entries[i].name);
    free(entries[i].target);
  }
  free(entries);
}

/* Records the entries of the directory `st` describes, at `path`, as durable. */
static void keep_listing(const char *path, const struct stat *st) {
  struct key key = key_of(st);
  struct listing *l = listing_of(key);
  if (l != NULL && l->frozen) return;
  if (l == NULL) {
    listings = xrealloc(listings, (n_listings + 1) * sizeof *listings);
    l = &listings[n_listings++];
    *l = (struct listing){key, NULL, 0, 0};
  }
  free_entries(l->entries, l->n);
  list_dir(path, &l->entries, &l->n);
}

/* Everything under `path` as it is: the state when the shim was loaded. */
static void keep_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISREG(st.st_mode)) {
    keep_content(path, &st);
  } else if (S_ISDIR(st.st_mode)) {
    keep_listing(path, &st);
    struct listing *l = listing_of(key_of(&st));
    for (size_t i = 0; l != NULL && i < l->n; i++) {
      char child[PATH_MAX];
      snprintf(child, sizeof child, "%s/%s", path, l->entries[i].name);
      keep_tree(child);
      l = listing_of(key_of(&st)); /* the array may have moved */
    }
  }
}

/* Written files of the image, to keep hard links links. */
static struct {
  struct key key;
  char *path;
} *written;
static size_t n_written;

static void write_file(const char *path, struct key key) {
  for (size_t i = 0; i < n_written; i++)
    if (same(written[i].key, key)) {
      if (link(written[i].path, path) == 0) return;
    }
  int fd = real_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  struct content *c = content_of(key);
  for (size_t at = 0; c != NULL && at < c->len;) {
    ssize_t n = write(fd, c->data + at, c->len - at);
    if (n <= 0) break;
    at += (size_t)n;
  }
  close(fd);
  written = xrealloc(written, (n_written + 1) * sizeof *written);
  written[n_written].key = key;
  written[n_written++].path = strdup(path);
}

/* Writes the directory `key` (at `live`, in the ordered model) into `out`, recursively. */
static void write_dir(const char *out, struct key key, const char *live, int depth) {
  struct entry *entries;
  size_t n;
  struct listing *l = listing_of(key);
  if (ordered) {
    list_dir(live, &entries, &n);
  } else {
    entries = l != NULL ? l->entries : NULL;
    n = l != NULL ? l->n : 0;
  }
  for (size_t i = 0; i < n && depth < 16; i++) {
    char path[PATH_MAX], child_live[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", out, entries[i].name);
    snprintf(child_live, sizeof child_live, "%s/%s", live, entries[i].name);
    switch (entries[i].type) {
      case DT_REG:
        write_file(path, entries[i].key);
        break;
      case DT_DIR:
        real_mkdir(path, 0755);
        write_dir(path, entries[i].key, child_live, depth + 1);
        break;
      case DT_LNK:
        if (symlink(entries[i].target, path) != 0) {
        }
        break;
    }
  }
  if (ordered) free_entries(entries, n);
}

/* The power cut: the image written, the process ended. */
static void cut(int at_exit) {
  struct stat st;
  if (out_dir != NULL && real_mkdir(out_dir, 0755) == 0 && lstat(root, &st) == 0) {
    write_dir(out_dir, key_of(&st), root, 0);
  }
  if (!at_exit) _exit(CUT_STATUS);
}

/* One operation under the tree: the cut falls before the one it names. Called locked. */
static void operation(void) {
  ops++;
  if (cut_at > 0 && ops == cut_at) cut(0);
}

static int tracked_fd(int fd, char *path) {
  return active && fd_path(fd, path) == 0 && in_tree(path);
}

static int tracked_path(int dirfd, const char *path) {
  if (!active || path == NULL) return 0;
  char full[PATH_MAX];
  absolute(dirfd, path, full);
  return in_tree(full);
}

/* A sync of `fd` by `real`: counted, failed where told, and what it makes durable kept. */
static int sync_fd(int fd, int (*real)(int)) {
  char path[PATH_MAX];
  if (!tracked_fd(fd, path)) return real(fd);
  pthread_mutex_lock(&lock);
  operation();
  struct stat st;
  int ok = fstat(fd, &st) == 0;
  if (++syncs == fail_sync) {
    if (ok) {
      struct key key = key_of(&st);
      if (S_ISDIR(st.st_mode)) {
        if (listing_of(key) == NULL) keep_listing("/nonexistent", &st);
        listing_of(key)->frozen = 1;
      } else {
        struct content *c = content_of(key);
        if (c == NULL) {
          contents = xrealloc(contents, (n_contents + 1) * sizeof *contents);
          c = &contents[n_contents++];
          *c = (struct content){key, NULL, 0, 0};
        }
        c->frozen = 1;
      }
    }
    pthread_mutex_unlock(&lock);
    errno = EIO;
    return -1;
  }
  int rc = real(fd);
  if (rc == 0 && ok) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (S_ISDIR(st.st_mode)) {
      keep_listing(proc, &st);
    } else if (S_ISREG(st.st_mode)) {
      keep_content(proc, &st);
    }
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int fsync(int fd) { return sync_fd(fd, real_fsync); }
int fdatasync(int fd) { return sync_fd(fd, real_fdatasync); }

/* A metadata operation on `path` (from `dirfd`): a cut point in the ordered model. */
static void metadata(int dirfd, const char *path) {
  if (!ordered || !tracked_path(dirfd, path)) return;
  pthread_mutex_lock(&lock);
  operation();
  pthread_mutex_unlock(&lock);
}

/* After an open that may have created the file: a new one gets a generation of its own. */
static int opened(int dirfd, const char *path, int flags, int existed, int fd) {
  if (fd >= 0 && (flags & O_CREAT) && !existed && tracked_path(dirfd, path)) {
    struct stat st;
    if (fstat(fd, &st) == 0) {
      pthread_mutex_lock(&lock);
      born(st.st_dev, st.st_ino);
      pthread_mutex_unlock(&lock);
    }
  }
  return fd;
}

static int exists_at(int dirfd, const char *path) {
  struct stat st;
  return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int open_at(int dirfd, const char *path, int flags, mode_t mode) {
  int existed = 1;
  if (flags & (O_CREAT | O_TRUNC)) {
    existed = exists_at(dirfd, path);
    metadata(dirfd, path);
  }
  int fd = real_openat(dirfd, path, flags, mode);
  return opened(dirfd, path, flags, existed, fd);
}

/* open, open64, openat and openat64, each opening at `at` what its leading parameters name: the
 * mode is an argument only with a flag that creates. */
#define OPEN_WRAPPER(name, at, ...)                                         \
  int name(__VA_ARGS__, int flags, ...) {                                   \
    va_list ap;                                                             \
    va_start(ap, flags);                                                    \
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0; \
    va_end(ap);                                                             \
    return open_at(at, path, flags, mode);                                  \
  }
OPEN_WRAPPER(open, AT_FDCWD, const char *path)
OPEN_WRAPPER(open64, AT_FDCWD, const char *path)
OPEN_WRAPPER(openat, dirfd, int dirfd, const char *path)
OPEN_WRAPPER(openat64, dirfd, int dirfd, const char *path)

int creat(const char *path, mode_t mode) {
  return open_at(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode) {
  return open_at(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

FILE *fopen(const char *path, const char *how) {
  int creates = how[0] == 'w' || how[0] == 'a';
  int existed = creates ? exists_at(AT_FDCWD, path) : 1;
  if (creates) metadata(AT_FDCWD, path);
  FILE *f = real_fopen(path, how);
  if (f != NULL) opened(AT_FDCWD, path, creates ? O_CREAT : 0, existed, fileno(f));
  return f;
}

FILE *fopen64(const char *path, const char *how) { return fopen(path, how); }

int rename(const char *from, const char *to) {
  metadata(AT_FDCWD, to);
  return real_rename(from, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to) {
  metadata(tofd, to);
  return real_renameat(fromfd, from, tofd, to);
}

int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags) {
  metadata(tofd, to);
  return real_renameat2(fromfd, from, tofd, to, flags);
}

int link(const char *from, const char *to) {
  metadata(AT_FDCWD, to);
  return real_link(from, to);
}

int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
  metadata(tofd, to);
  return real_linkat(fromfd, from, tofd, to, flags);
}

int unlink(const char *path) {
  metadata(AT_FDCWD, path);
  return real_unlink(path);
}

int unlinkat(int dirfd, const char *path, int flags) {
  metadata(dirfd, path);
  return real_unlinkat(dirfd, path, flags);
}

static int made_dir(int dirfd, const char *path, int rc) {
  if (rc == 0 && tracked_path(dirfd, path)) {
    struct stat st;
    if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      pthread_mutex_lock(&lock);
      born(st.st_dev, st.st_ino);
      pthread_mutex_unlock(&lock);
    }
  }
  return rc;
}

int mkdir(const char *path, mode_t mode) {
  metadata(AT_FDCWD, path);
  return made_dir(AT_FDCWD, path, real_mkdir(path, mode));
}

int mkdirat(int dirfd, const char *path, mode_t mode) {
  metadata(dirfd, path);
  return made_dir(dirfd, path, real_mkdirat(dirfd, path, mode));
}

int rmdir(const char *path) {
  metadata(AT_FDCWD, path);
  return real_rmdir(path);
}

int ftruncate(int fd, off_t len) {
  char path[PATH_MAX];
  if (ordered && tracked_fd(fd, path)) metadata(AT_FDCWD, path);
  return real_ftruncate(fd, len);
}

int ftruncate64(int fd, off_t len) { return ftruncate(fd, len); }

int truncate(const char *path, off_t len) {
  metadata(AT_FDCWD, path);
  return real_truncate(path, len);
}

static void at_exit(void) {
  pthread_mutex_lock(&lock);
  if (count_file != NULL) {
    FILE *f = real_fopen(count_file, "w");
    if (f != NULL) {
      fprintf(f, "%ld %ld\n", ops, syncs);
      fclose(f);
    }
  }
  if (cut_at == 0 || ops < cut_at) cut(1);
  active = 0;
  pthread_mutex_unlock(&lock);
}

#define REAL(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)

__attribute__((constructor)) static void power_cut_init(void) {
  REAL(open);
  REAL(openat);
  REAL(fsync);
  REAL(fdatasync);
  REAL(rename);
  REAL(renameat);
  REAL(renameat2);
  REAL(link);
  REAL(linkat);
  REAL(unlink);
  REAL(unlinkat);
  REAL(mkdir);
  REAL(mkdirat);
  REAL(rmdir);
  REAL(ftruncate);
  REAL(truncate);
  REAL(fopen);
  const char *dir = getenv("POWER_CUT_DIR");
  if (dir == NULL || realpath(dir, root) == NULL) return;
  root_len = strlen(root);
  out_dir = getenv("POWER_CUT_OUT");
  count_file = getenv("POWER_CUT_COUNT");
  const char *model = getenv("POWER_CUT_MODEL");
  ordered = model != NULL && strcmp(model, "ordered") == 0;
  const char *at = getenv("POWER_CUT_AT");
  if (at != NULL) cut_at = strcmp(at, "exit") == 0 ? 0 : atol(at);
  const char *fail = getenv("POWER_CUT_FAIL_SYNC");
  if (fail != NULL) fail_sync = atol(fail);
  keep_tree(root);
  atexit(at_exit);
  active = 1;
}
