/* A program whose LevelDB is in shared libraries it loads (RTLD_GLOBAL, as Python loads a
   module asked to share its symbols): each library carries LevelDB with its C API and, in
   the drop-in's builds, the static drop-in, and exports them, so that the first library's
   definitions take the second's calls. Runs each library's workload (the C++ one) on its own
   database (run_linked_route.sh). LIBRARY_A and, built with LIBRARY_B, that one are the
   libraries' paths.

   Usage: library_host DB_A [DB_B] */
#include <stdio.h>

#include "plugin_workload.h"

static int run(const char *library, const char *entry, char *program, char *db) {
  char *args[3];
  workload_main workload = load_workload("library_host", library, RTLD_NOW | RTLD_GLOBAL,
                                         entry, NULL);
  if (workload == NULL) return 9;
  args[0] = program;
  args[1] = db;
  args[2] = NULL;
  return workload(2, args);
}

int main(int argc, char **argv) {
#ifdef LIBRARY_B
  const int libraries = 2;
#else
  const int libraries = 1;
#endif
  int rc;
  if (argc != 1 + libraries) {
    fprintf(stderr, "usage: library_host DB_A%s\n", libraries == 2 ? " DB_B" : "");
    return 2;
  }
  rc = run(LIBRARY_A, "workload_a", argv[0], argv[1]);
#ifdef LIBRARY_B
  if (rc == 0) rc = run(LIBRARY_B, "workload_b", argv[0], argv[2]);
#endif
  return rc;
}
