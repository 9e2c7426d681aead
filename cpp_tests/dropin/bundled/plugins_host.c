/* A host that loads plugins with dlopen(RTLD_LOCAL), each linked with the drop-in over a
 * LevelDB of its own (or with the drop-in's static library and LevelDB compiled into it), and
 * runs each one's C workload on a database of its own: the drop-in, loaded into the plugins'
 * scopes and not the global one, must serve each plugin its own LevelDB (run_plugins.sh).
 *
 * Usage: plugins_host WORK_DIR PLUGIN...   (plugin i writes WORK_DIR/db<i>) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    void *handle = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      fprintf(stderr, "plugins_host: %s\n", dlerror());
      return 1;
    }
    int (*workload)(int, char **) = (int (*)(int, char **))dlsym(handle, "dropin_workload_main");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/db%d", argv[1], i - 1);
    char *args[] = {argv[i], dir, NULL};
    if (workload == NULL || workload(2, args) != 0) {
      fprintf(stderr, "plugins_host: %s: its workload failed\n", argv[i]);
      return 1;
    }
    fflush(stdout);
  }
  return 0;
}
