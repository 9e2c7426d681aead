/* How the hosts reach a plugin's (or a library's) workload: the object loaded with the flags
 * the host's case calls for, then its entry point. */
#ifndef LEVELDB_BLOOM_BUNDLED_PLUGIN_WORKLOAD_H
#define LEVELDB_BLOOM_BUNDLED_PLUGIN_WORKLOAD_H

#include <dlfcn.h>
#include <stdio.h>

typedef int (*workload_main)(int, char **);

/* `entry` of `path` loaded with `flags` (its handle in *handle, if handle is not NULL); NULL
 * once standard error says why, as `host`. */
static workload_main load_workload(const char *host, const char *path, int flags,
                                   const char *entry, void **handle) {
  void *loaded = dlopen(path, flags);
  if (loaded == NULL) {
    fprintf(stderr, "%s: %s\n", host, dlerror());
    return NULL;
  }
  if (handle != NULL) *handle = loaded;
  workload_main workload = (workload_main)dlsym(loaded, entry);
  if (workload == NULL) fprintf(stderr, "%s: %s has no %s\n", host, path, entry);
  return workload;
}

/* Runs the plugin `path`'s workload on `argc`, `argv`, loaded as a plugin host loads each of
 * its plugins (into a scope of its own); 0 when it returned 0, else 1 once standard error
 * says why, as `host`. Inline: not every host calls it. */
static inline int run_plugin_workload(const char *host, const char *path, int argc,
                                      char **argv) {
  workload_main workload =
      load_workload(host, path, RTLD_NOW | RTLD_LOCAL, "dropin_workload_main", NULL);
  if (workload == NULL) return 1;
  if (workload(argc, argv) != 0) {
    fprintf(stderr, "%s: %s: its workload failed\n", host, path);
    return 1;
  }
  return 0;
}

#endif
