/* A host program with LevelDB compiled in (and, in the drop-in's builds, the static drop-in
   linked ahead of it, without its C API) that runs the C++ workload itself, then loads a
   plugin carrying no LevelDB of its own, whose LevelDB calls bind into the host, and runs
   the plugin's workload: the plugin's LevelDB is the host's (run_linked_route.sh).

   Usage: linked_host HOST_DB PLUGIN PLUGIN_DB */
#include <stdio.h>

#include "plugin_workload.h"

int dropin_workload_main(int argc, char **argv);

int main(int argc, char **argv) {
  char *host_args[3], *plugin_args[3];
  workload_main plugin_main;
  int rc;
  if (argc != 4) {
    fprintf(stderr, "usage: linked_host HOST_DB PLUGIN PLUGIN_DB\n");
    return 2;
  }
  host_args[0] = argv[0];
  host_args[1] = argv[1];
  host_args[2] = NULL;
  rc = dropin_workload_main(2, host_args);
  if (rc != 0) return rc;
  plugin_main = load_workload("linked_host", argv[2], RTLD_NOW | RTLD_LOCAL,
                              "dropin_workload_main", NULL);
  if (plugin_main == NULL) return 9;
  plugin_args[0] = argv[0];
  plugin_args[1] = argv[3];
  plugin_args[2] = NULL;
  return plugin_main(2, plugin_args);
}
