// Programs built and run the ways an operator's programs are, which the ordinary drop-in
// proofs do not name: application code using the Bloom policy directly, fork in a
// multi-threaded program, a first filter built while another thread's dlopen runs an
// initializer, setenv in a thread, standard error closed, small stacks, a wrapper policy in
// a plugin, a program that exits at once. It knows nothing of leveldb-bloom; run_hostile.sh
// runs each mode stock and with the drop-in preloaded (both formats) and compares what it
// prints (CMakeLists.txt builds it the ways the cases need).
//
// Usage: hostile MODE WORK_DIR [PLUGIN]
//   direct       NewBloomFilterPolicy, CreateFilter and KeyMayMatch called by application code
//   db           a database written, compacted and read back through LevelDB
//   wrapper      the same, with the policy a counting wrapper from PLUGIN (a shared object)
//   fork         forks while another thread makes policies and filters; each child writes a
//                database; none may hang
//   dlopen-init  a thread builds its first filter while the main thread's dlopen of PLUGIN
//                runs an initializer that waits for that filter
//   setenv       a thread calls setenv and unsetenv while policies and filters are made
//   closed-fds   descriptors 0-2 closed and reopened on files, then the direct mode: nothing
//                may be written into those files (the result goes to WORK_DIR/result)
//   small-stack  the first policy and filter made on a thread with a 64 KiB stack, and a
//                policy made in a signal handler on a 64 KiB alternate stack
//   alt-stack-8k, alt-stack-16k   the process's first policy made in a signal handler on an
//                alternate stack of 8 or 16 KiB with a guard page below it (stock's needs
//                about 4.5 KiB, the kernel's signal frame included); the bytes it used go to
//                standard error
//   quick        one policy, one filter, exit
//   wide         the direct mode at 40 bits per key, more than compact filters take
//   db-dlopen    the db mode with the policy from NewBloomFilterPolicy as dlsym finds it in
//                PLUGIN, loaded with dlopen after the program started (the drop-in itself,
//                or LevelDB's library for the stock run)

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

namespace {

FILE* out = stdout;

[[noreturn]] void die(const char* what) {
  std::fprintf(out, "hostile: %s\n", what);
  std::fflush(out);
  std::_Exit(1);
}

uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string Key(int i) { return "key-" + std::to_string(i * 7919 % 100003); }

// Builds a filter for `n` keys with `policy`, as application code does, and answers queries:
// every present key must be found; the absent ones found and the filter's bytes are printed
// (nothing with no label, but a key not found).
void UsePolicy(const leveldb::FilterPolicy* policy, int n, const char* label) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; i++) keys.push_back(Key(i));
  std::vector<leveldb::Slice> slices(keys.begin(), keys.end());
  std::string filter = "prefix";  // CreateFilter appends
  policy->CreateFilter(slices.data(), n, &filter);
  if (filter.compare(0, 6, "prefix") != 0) die("CreateFilter did not append");
  const leveldb::Slice bytes(filter.data() + 6, filter.size() - 6);
  int present = 0, absent = 0;
  for (int i = 0; i < n; i++) present += policy->KeyMayMatch(slices[i], bytes);
  for (int i = n; i < 2 * n; i++) absent += policy->KeyMayMatch(Key(i), bytes);
  if (label == nullptr) {
    if (present != n) die("a present key was not found");
    return;
  }
  std::fprintf(out, "%s: %s, present %d of %d\n", label, policy->Name(), present, n);
  std::fprintf(out, "%s filter: %zu bytes, digest %016llx, absent found %d\n", label,
               bytes.size(), static_cast<unsigned long long>(Fnv(0xcbf29ce484222325ULL,
                                                                 bytes.data(), bytes.size())),
               absent);
}

void Direct(int n, const char* label, int bits_per_key = 10) {
  const leveldb::FilterPolicy* policy = leveldb::NewBloomFilterPolicy(bits_per_key);
  if (policy == nullptr) die("NewBloomFilterPolicy returned NULL");
  UsePolicy(policy, n, label);
  delete policy;
}

// A database at `dir` written through `policy`: `n` keys, compacted into tables, read back.
// Prints what was found and a digest of the tables' bytes.
void Database(const std::string& dir, const leveldb::FilterPolicy* policy, int n, bool quiet) {
  leveldb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  options.filter_policy = policy;
  options.compression = leveldb::kNoCompression;
  options.write_buffer_size = 64 << 10;
  leveldb::DB* db = nullptr;
  if (!leveldb::DB::Open(options, dir, &db).ok()) die("open");
  for (int i = 0; i < n; i++) {
    if (!db->Put(leveldb::WriteOptions(), Key(i), std::string(40, 'v')).ok()) die("put");
  }
  db->CompactRange(nullptr, nullptr);
  delete db;
  options.error_if_exists = false;
  if (!leveldb::DB::Open(options, dir, &db).ok()) die("reopen");
  int found = 0, phantom = 0;
  std::string value;
  for (int i = 0; i < 2 * n; i++) {
    const bool got = db->Get(leveldb::ReadOptions(), Key(i), &value).ok();
    (i < n ? found : phantom) += got;
  }
  delete db;
  if (quiet) {
    if (found != n || phantom != 0) die("a database read back wrongly");
    return;
  }
  std::fprintf(out, "database: %d of %d keys found, %d absent keys found\n", found, n, phantom);
  std::vector<std::string> tables;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".ldb") == 0) tables.push_back(name);
    }
    closedir(d);
  }
  std::sort(tables.begin(), tables.end());
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& t : tables) {
    FILE* f = std::fopen((dir + "/" + t).c_str(), "rb");
    if (f == nullptr) die("a table cannot be read");
    char buf[4096];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) h = Fnv(h, buf, got);
    std::fclose(f);
  }
  std::fprintf(out, "tables: %zu, digest %016llx\n", tables.size(),
               static_cast<unsigned long long>(h));
}

// --- fork --------------------------------------------------------------------------------

void Fork(const std::string& dir) {
  std::atomic<bool> stop{false};
  std::thread maker([&] {
    while (!stop.load()) {
      const leveldb::FilterPolicy* p = leveldb::NewBloomFilterPolicy(10);
      std::vector<std::string> keys = {"a", "b", "c"};
      std::vector<leveldb::Slice> s(keys.begin(), keys.end());
      std::string f;
      p->CreateFilter(s.data(), 3, &f);
      delete p;
    }
  });
  const int kForks = 150;
  int hung = 0, failed = 0;
  for (int i = 0; i < kForks; i++) {
    const pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      const leveldb::FilterPolicy* policy = leveldb::NewBloomFilterPolicy(10);
      Database(dir + "/child" + std::to_string(i), policy, 300, true);
      delete policy;
      std::_Exit(0);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      usleep(1000);
    }
    if (done == 0) {
      hung++;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
    }
  }
  stop = true;
  maker.join();
  std::fprintf(out, "forks: %d, hung %d, failed %d\n", kForks, hung, failed);
}

// --- a filter built inside another thread's dlopen initializer ---------------------------

std::atomic<int> init_stage{0};  // 1: the initializer runs; 2: the filter is built

}  // namespace

// Called by the plugin's initializer (hostile_init_plugin.c), inside dlopen: waits up to 10 s
// for the other thread's first filter. Returns 1 if it came.
extern "C" __attribute__((visibility("default"))) int hostile_in_initializer() {
  init_stage = 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (init_stage.load() != 2 && std::chrono::steady_clock::now() < deadline) usleep(1000);
  return init_stage.load() == 2;
}

namespace {

void DlopenInit(const char* plugin) {
  std::thread builder([] {
    while (init_stage.load() != 1) usleep(100);
    Direct(100, "in another thread's initializer");
    init_stage = 2;
  });
  void* handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) die(dlerror());
  builder.join();
  auto* came = reinterpret_cast<int*>(dlsym(handle, "hostile_initializer_saw_filter"));
  if (came == nullptr) die("the plugin has no hostile_initializer_saw_filter");
  std::fprintf(out, "the initializer saw the filter: %s\n", *came ? "yes" : "no (hung)");
  dlclose(handle);
}

// --- setenv in a thread --------------------------------------------------------------------

void Setenv() {
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    int i = 0;
    while (!stop.load()) {
      setenv("LEVELDB_BLOOM_FORMAT", i % 2 ? "compact" : "bloom", 1);
      setenv(("HOSTILE_FILLER_" + std::to_string(i % 64)).c_str(), "x", 1);
      unsetenv("LEVELDB_BLOOM_BITS_PER_KEY");
      i++;
    }
  });
  for (int i = 0; i < 300; i++) Direct(50, i == 0 ? "with setenv in a thread" : nullptr);
  stop = true;
  churn.join();
}

// --- closed descriptors ----------------------------------------------------------------------

void ClosedFds(const std::string& dir) {
  close(0);
  close(1);
  close(2);
  for (int fd = 0; fd < 3; fd++) {
    const std::string victim = dir + "/victim" + std::to_string(fd);
    if (open(victim.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644) != fd) std::_Exit(3);
  }
  FILE* result = std::fopen((dir + "/result").c_str(), "w");
  if (result == nullptr) std::_Exit(3);
  out = result;
  Direct(200, "with descriptors 0-2 on files");
  for (int fd = 0; fd < 3; fd++) {
    struct stat st;
    if (fstat(fd, &st) != 0) die("fstat");
    std::fprintf(out, "bytes written into descriptor %d's file: %lld\n", fd,
                 static_cast<long long>(st.st_size));
  }
  std::fclose(result);
}

// --- small stacks ----------------------------------------------------------------------------

constexpr size_t kSmallStack = 64 << 10;
std::atomic<int> handler_ran{0};

void* SmallStackThread(void*) {
  Direct(100, "on a 64 KiB thread stack");
  return nullptr;
}

void Handler(int) {
  const leveldb::FilterPolicy* p = leveldb::NewBloomFilterPolicy(10);
  handler_ran = p != nullptr ? 1 : 2;
  delete p;
}

// Runs Handler on the alternate stack [stack, stack + size).
void RaiseOnAltStack(void* stack, size_t size) {
  stack_t ss;
  ss.ss_sp = stack;
  ss.ss_size = size;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, nullptr) != 0) die("sigaltstack");
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = Handler;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGUSR1, &sa, nullptr);
  raise(SIGUSR1);
}

void SmallStack() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, kSmallStack) != 0) die("pthread_attr_setstacksize");
  pthread_t thread;
  if (pthread_create(&thread, &attr, SmallStackThread, nullptr) != 0) die("pthread_create");
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  RaiseOnAltStack(std::malloc(kSmallStack), kSmallStack);
  std::fprintf(out, "a policy made on a 64 KiB signal stack: %s\n",
               handler_ran.load() == 1 ? "yes" : "no");
}

// A policy made in a signal handler on an alternate stack of `size` bytes, above a guard page
// that an overflow hits (SIGSEGV) rather than the heap.
void AltStack(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mapped = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
  if (mapped == MAP_FAILED) die("mmap");
  if (mprotect(mapped, page, PROT_NONE) != 0) die("mprotect");
  char* stack = static_cast<char*>(mapped) + page;
  std::memset(stack, 0xa5, size);  // painted, to count what the handler used
  RaiseOnAltStack(stack, size);
  size_t untouched = 0;
  while (untouched < size && static_cast<unsigned char>(stack[untouched]) == 0xa5) untouched++;
  std::fprintf(stderr, "hostile: the handler used %zu of %zu bytes\n", size - untouched, size);
  std::fprintf(out, "a policy made on a %zu KiB signal stack: %s\n", size >> 10,
               handler_ran.load() == 1 ? "yes" : "no");
}

}  // namespace

#ifdef HOSTILE_MIXED_ABI
extern "C" unsigned long hostile_old_abi_length(const char* text);
#endif

int main(int argc, char** argv) {
#ifdef HOSTILE_MIXED_ABI
  if (hostile_old_abi_length(argv[0]) == 0) return 3;
#endif
  if (argc < 3) {
    std::fprintf(stderr, "usage: hostile MODE WORK_DIR [PLUGIN]\n");
    return 2;
  }
  // db-dlopen: the policy made first, before the program's first std::string call (a
  // program whose string imports the loader has not bound yet).
  const leveldb::FilterPolicy* dlopened_policy = nullptr;
  if (std::strcmp(argv[1], "db-dlopen") == 0 && argc > 3) {
    void* handle = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) die(dlerror());
    using Make = const leveldb::FilterPolicy* (*)(int);
    auto make = reinterpret_cast<Make>(dlsym(handle, "_ZN7leveldb20NewBloomFilterPolicyEi"));
    if (make == nullptr) die("no NewBloomFilterPolicy in PLUGIN");
    dlopened_policy = make(10);
  }
  const std::string mode = argv[1], dir = argv[2];
  const char* plugin = argc > 3 ? argv[3] : nullptr;
  mkdir(dir.c_str(), 0755);
  if (mode == "direct") {
    Direct(1000, "direct");
  } else if (mode == "db") {
    const leveldb::FilterPolicy* policy = leveldb::NewBloomFilterPolicy(10);
    Database(dir + "/db", policy, 5000, false);
    delete policy;
  } else if (mode == "wrapper" && plugin != nullptr) {
    void* handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) die(dlerror());
    using Make = const leveldb::FilterPolicy* (*)(int);
    auto make = reinterpret_cast<Make>(dlsym(handle, "hostile_wrapped_policy"));
    if (make == nullptr) die("the plugin has no hostile_wrapped_policy");
    const leveldb::FilterPolicy* policy = make(10);
    Database(dir + "/db", policy, 5000, false);
    delete policy;
  } else if (mode == "fork") {
    Fork(dir);
  } else if (mode == "dlopen-init" && plugin != nullptr) {
    DlopenInit(plugin);
  } else if (mode == "setenv") {
    Setenv();
  } else if (mode == "closed-fds") {
    ClosedFds(dir);
  } else if (mode == "small-stack") {
    SmallStack();
  } else if (mode == "alt-stack-8k") {
    AltStack(8 << 10);
  } else if (mode == "alt-stack-16k") {
    AltStack(16 << 10);
  } else if (mode == "db-dlopen" && plugin != nullptr) {
    if (dlopened_policy == nullptr) die("NewBloomFilterPolicy returned NULL");
    Database(dir + "/db", dlopened_policy, 5000, false);
    delete dlopened_policy;
  } else if (mode == "quick") {
    Direct(10, "quick");
  } else if (mode == "wide") {
    Direct(1000, "wide", 40);
  } else {
    std::fprintf(stderr, "hostile: unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}
