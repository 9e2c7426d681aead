/* A counting shim, as a profiler or a tracing tool preloads one: it defines LevelDB's
 * NewBloomFilterPolicy, counts the call and forwards it to the next definition in lookup
 * order. Preloaded between two copies of the drop-in (LD_PRELOAD=A:shim:B), the first copy's
 * policy is then the second's, handed on by the shim: the statistics must tell the second
 * copy's story, not an idle first copy's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef const void *(*new_policy_fn)(int);

unsigned long counting_shim_calls = 0;

const void *_ZN7leveldb20NewBloomFilterPolicyEi(int bits_per_key) {
  new_policy_fn next = (new_policy_fn)dlsym(RTLD_NEXT, "_ZN7leveldb20NewBloomFilterPolicyEi");
  counting_shim_calls++;
  return next != NULL ? next(bits_per_key) : NULL;
}
