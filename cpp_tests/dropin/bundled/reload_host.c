/* A host that loads a plugin carrying LevelDB with one std::string layout, runs its workload,
 * unloads it, and loads another plugin carrying LevelDB with the other layout under the same
 * file name (copied over the first, as an upgrade installs a new build), where the loader may
 * map it at the same address, with its link map in the same memory: a decision the drop-in
 * made for the first must not be applied to the second.
 *
 * Usage: reload_host PLUGIN_A PLUGIN_B DB_DIR   (PLUGIN_A's database goes to DB_DIR.first;
 *        both are loaded as DB_DIR.plugin.so)
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "plugin_workload.h"

/* Copies `from` to a new file renamed over `to`. */
static int install(const char *from, const char *to) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", to);
  FILE *in = fopen(from, "rb"), *out = fopen(tmp, "wb");
  if (in == NULL || out == NULL) return 1;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
  fclose(in);
  if (fclose(out) != 0) return 1;
  return rename(tmp, to);
}

static int run(const char *plugin, const char *db, void **base) {
  void *handle = NULL;
  workload_main workload = load_workload("reload_host", plugin, RTLD_NOW | RTLD_LOCAL,
                                         "dropin_workload_main", &handle);
  if (workload == NULL) return 1;
  struct link_map *map = NULL;
  dlinfo(handle, RTLD_DI_LINKMAP, &map);
  *base = map != NULL ? (void *)map->l_addr : NULL;
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
  char plugin[4096];
  snprintf(plugin, sizeof plugin, "%s.plugin.so", argv[3]);
  void *base_a = NULL, *base_b = NULL;
  if (install(argv[1], plugin) != 0 || run(plugin, first, &base_a) != 0) return 1;
  if (install(argv[2], plugin) != 0 || run(plugin, argv[3], &base_b) != 0) return 1;
  fprintf(stderr, "reload_host: the second plugin was loaded %s\n",
          base_a == base_b ? "at the first one's address" : "elsewhere");
  return 0;
}
