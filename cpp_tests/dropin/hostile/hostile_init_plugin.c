/* A plugin whose initializer, run inside the main thread's dlopen, waits for another
 * thread's first filter (hostile.cc's dlopen-init mode): the drop-in must build it without
 * waiting on the dynamic loader, whose lock dlopen holds while initializers run. */
#define _GNU_SOURCE
#include <dlfcn.h>

int hostile_initializer_saw_filter = 0;

__attribute__((constructor)) static void wait_for_filter(void) {
  int (*wait)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hostile_in_initializer");
  hostile_initializer_saw_filter = wait != 0 && wait();
}
