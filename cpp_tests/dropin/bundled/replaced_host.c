/* A program that loads its LevelDB shared object with dlopen, after which the file at that
 * path is replaced by another build (as a package upgrade renames a new file over the old
 * one while programs run), and only then opens a database: it loads the workload
 * (dropin_c_program.c as a library, linked with that LevelDB by name) and runs it.
 *
 * Compiled with LEVELDB_SO (where the object is loaded from, a copy this program makes),
 * PRISTINE (the build it copies there), REPLACEMENT (the other build renamed over it) and
 * WORKLOAD (the workload's shared object). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  FILE *out = in ? fopen(to, "wb") : NULL;
  char buf[1 << 16];
  size_t n;
  int ok = in && out;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  if (in) fclose(in);
  if (out && fclose(out) != 0) ok = 0;
  return ok;
}

int main(int argc, char **argv) {
  char staged[4096];
  snprintf(staged, sizeof staged, "%s.new", LEVELDB_SO);
  if (!copy(PRISTINE, LEVELDB_SO)) {
    perror("replaced_host: copying the LevelDB build");
    return 1;
  }
  if (dlopen(LEVELDB_SO, RTLD_NOW | RTLD_GLOBAL) == NULL) {
    fprintf(stderr, "replaced_host: %s\n", dlerror());
    return 1;
  }
  if (!copy(REPLACEMENT, staged) || rename(staged, LEVELDB_SO) != 0) {
    perror("replaced_host: replacing the LevelDB file");
    return 1;
  }
  void *workload = dlopen(WORKLOAD, RTLD_NOW);
  int (*run)(int, char **) = NULL;
  if (workload != NULL) *(void **)&run = dlsym(workload, "dropin_workload_main");
  if (run == NULL) {
    fprintf(stderr, "replaced_host: %s\n", dlerror());
    return 1;
  }
  return run(argc, argv);
}
