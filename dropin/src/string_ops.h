// What policy.cc (compiled once, with no std::string), string_ops.cc (compiled once per
// std::string layout) and the Rust side (lib.rs, owner.rs) share.
#ifndef LEVELDB_BLOOM_DROPIN_STRING_OPS_H_
#define LEVELDB_BLOOM_DROPIN_STRING_OPS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// One std::string layout's own code: its size, and resize (throws as std::string's does),
// returning its characters.
typedef struct leveldb_bloom_dropin_string_ops {
  size_t (*size)(const void* s);
  char* (*resize)(void* s, size_t n);
} leveldb_bloom_dropin_string_ops;

// What the drop-in decided for the LevelDB whose code holds `caller` (owner.rs): to grow its
// strings with `string_ops`, or, if NULL, to leave its filters to `own_policy`, that
// LevelDB's own NewBloomFilterPolicy (NULL if it has none the drop-in can find), for the
// reason `reason`. Decisions live as long as the process.
typedef struct leveldb_bloom_dropin_decision {
  const void* caller;
  const leveldb_bloom_dropin_string_ops* string_ops;
  const void* (*own_policy)(int bits_per_key);
  const char* reason;
} leveldb_bloom_dropin_decision;

// The Rust side's functions the policy calls (lib.rs hands them over with each policy, so
// that the library exports none of them).
typedef struct leveldb_bloom_dropin_hooks {
  // owner.rs: the decision for the LevelDB whose code holds `caller`; never NULL.
  const leveldb_bloom_dropin_decision* (*decide)(const void* caller);
  // lib.rs: counts a filter a declined LevelDB's own policy wrote.
  void (*count_own_filter)(void);
} leveldb_bloom_dropin_hooks;

// string_ops.cc, one per layout.
extern const leveldb_bloom_dropin_string_ops leveldb_bloom_dropin_string_ops_cxx11;
extern const leveldb_bloom_dropin_string_ops leveldb_bloom_dropin_string_ops_old;

#ifdef __cplusplus
}
#endif

#endif  // LEVELDB_BLOOM_DROPIN_STRING_OPS_H_
