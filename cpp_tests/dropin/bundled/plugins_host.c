/* A host that loads plugins with dlopen(RTLD_LOCAL), each linked with the drop-in over a
 * LevelDB of its own (or with the drop-in's static library and LevelDB compiled into it), and
 * runs each one's C workload on a database of its own: the drop-in, loaded into the plugins'
 * scopes and not the global one, must serve each plugin its own LevelDB (run_plugins.sh).
 *
 * Usage: plugins_host WORK_DIR PLUGIN...   (plugin i writes WORK_DIR/db<i>) */
#define _GNU_SOURCE
#include <stdio.h>

#include "plugin_workload.h"

int main(int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/db%d", argv[1], i - 1);
    char *args[] = {argv[i], dir, NULL};
    if (run_plugin_workload("plugins_host", argv[i], 2, args) != 0) return 1;
    fflush(stdout);
  }
  return 0;
}
