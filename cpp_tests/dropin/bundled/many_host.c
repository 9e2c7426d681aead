/* A host that loads many plugins, each carrying a LevelDB Bloom policy of its own, and keeps
 * them all loaded: the drop-in must serve or decline each, and its statistics count every one
 * of them exactly, however many (run_many.sh loads 300, a third of them a fork's).
 *
 * Usage: many_host PLUGIN...   (runs each plugin's dropin_workload_main, in order, and prints
 *                               what each printed) */
#define _GNU_SOURCE
#include <stdio.h>

#include "plugin_workload.h"

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (run_plugin_workload("many_host", argv[i], 0, NULL) != 0) return 1;
  }
  return 0;
}
