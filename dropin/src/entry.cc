// The bodies of the drop-in's C++ entry points (exported by lib.rs, whose exported symbols
// jump here): C++, so that each can tell who called it. The return address names the object
// (a libleveldb, a program, an extension module) whose LevelDB will use the policy, and
// caller.rs reads which std::string that LevelDB was built with from that object's symbols.

// lib.rs: the policy object for the LevelDB whose code holds `caller`.
extern "C" const void* leveldb_bloom_dropin_filter_policy_for(int bits_per_key,
                                                              const void* caller);

// An address inside the calling instruction (the return address may be the first byte
// after the caller's function).
#define LEVELDB_BLOOM_CALLER \
  (static_cast<const char*>(__builtin_extract_return_addr(__builtin_return_address(0))) - 1)

// leveldb::NewBloomFilterPolicy(int): replaces LevelDB's definition (util/bloom.cc).
extern "C" const void* leveldb_bloom_dropin_entry_new_bloom_filter_policy(int bits_per_key) {
  return leveldb_bloom_dropin_filter_policy_for(bits_per_key, LEVELDB_BLOOM_CALLER);
}

// leveldb_bloom_dropin_filter_policy_create(int): the drop-in's policy object, for a program
// that also uses stock LevelDB's policy in the same process.
extern "C" const void* leveldb_bloom_dropin_entry_filter_policy_create(int bits_per_key) {
  return leveldb_bloom_dropin_filter_policy_for(bits_per_key, LEVELDB_BLOOM_CALLER);
}
