// A C++ program built with libstdc++'s C++11 strings over a wrapper library whose LevelDB
// uses the old strings: it makes the Bloom policies through the wrapper's tail-calling
// shim_bloom (tail_call_shim.c), so that NewBloomFilterPolicy returns into this program, and
// hands them to the wrapper's workload (dropin_cxx_program.cc as a library, old strings),
// which opens its LevelDB with them. Prints what the workload prints.
#include <string>

extern "C" const void* shim_bloom(int bits_per_key);
extern "C" int dropin_workload_main(int argc, char** argv);

namespace {
unsigned long made = 0;
std::string made_by;
}  // namespace

// Not a tail call: the policy is counted after shim_bloom returns.
extern "C" const void* dropin_host_new_policy(int bits_per_key) {
  const void* policy = shim_bloom(bits_per_key);
  made++;
  made_by.append("shim_bloom ");
  return policy;
}

int main(int argc, char** argv) {
  const int rc = dropin_workload_main(argc, argv);
  return rc == 0 && made == 2 && made_by.size() == 2 * std::string("shim_bloom ").size() ? 0 : 1;
}
