/* A host that loads a plugin carrying LevelDB with one std::string layout, runs its workload,
 * unloads it, and loads another plugin carrying LevelDB with the other layout (where the
 * loader often maps it at the same address, its CreateFilter call at a nearby one): a
 * decision the drop-in made for the first must not be applied to the second.
 *
 * Usage: reload_host PLUGIN_A PLUGIN_B DB_DIR   (PLUGIN_A's database goes to DB_DIR.first)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static int run(const char *plugin, const char *db, void **base) {
  void *handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    fprintf(stderr, "reload_host: %s\n", dlerror());
    return 1;
  }
  struct link_map *map = NULL;
  dlinfo(handle, RTLD_DI_LINKMAP, &map);
  *base = map != NULL ? (void *)map->l_addr : NULL;
  int (*workload)(int, char **) = (int (*)(int, char **))dlsym(handle, "dropin_workload_main");
  if (workload == NULL) {
    fprintf(stderr, "reload_host: %s has no dropin_workload_main\n", plugin);
    return 1;
  }
  char *argv[] = {(char *)"reload_host", (char *)db, NULL};
  const int rc = workload(2, argv);
  dlclose(handle);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: reload_host PLUGIN_A PLUGIN_B DB_DIR\n");
    return 2;
  }
  char first[4096];
  snprintf(first, sizeof first, "%s.first", argv[3]);
  void *base_a = NULL, *base_b = NULL;
  if (run(argv[1], first, &base_a) != 0) return 1;
  if (run(argv[2], argv[3], &base_b) != 0) return 1;
  fprintf(stderr, "reload_host: the second plugin was loaded %s\n",
          base_a == base_b ? "at the first one's address" : "elsewhere");
  return 0;
}
