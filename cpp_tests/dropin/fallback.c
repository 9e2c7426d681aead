/* A caller whose symbols name neither std::string layout: a C program that calls
 * leveldb::NewBloomFilterPolicy(int) by its mangled name, and names no LevelDB function that
 * takes a string. The drop-in, preloaded, cannot tell which string the policy must write, so
 * it hands the call to the program's own NewBloomFilterPolicy (linked with libleveldb: the
 * object must come from there), or, with none (not linked with LevelDB), returns NULL.
 * run_dropin_fallback.cmake checks what this prints, the drop-in's line on standard error
 * and its statistics file.
 *
 * Prints "policy_from=<file holding the object's vtable>" or "policy=null". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

typedef const void* (*new_policy_fn)(int bits_per_key);

int main(void) {
  /* Looked up, so that the program needs no LevelDB to link: the first definition in the
   * process, the preloaded drop-in's. */
  void* symbol = dlsym(RTLD_DEFAULT, "_ZN7leveldb20NewBloomFilterPolicyEi");
  if (symbol == NULL) {
    puts("no NewBloomFilterPolicy in the process");
    return 1;
  }
  new_policy_fn new_policy;
  *(void**)&new_policy = symbol;
  const void* policy = new_policy(10);
  if (policy == NULL) {
    puts("policy=null");
    return 0;
  }
  /* The object's first word is its vtable pointer; slot 1 is the deleting destructor. */
  void (*const* vtable)(const void*) = *(void (*const* const*)(const void*))policy;
  Dl_info info;
  if (dladdr((const void*)vtable, &info) == 0 || info.dli_fname == NULL) {
    puts("policy_from=unknown");
    return 1;
  }
  printf("policy_from=%s\n", info.dli_fname);
  vtable[1](policy);
  return 0;
}
