/*
 * The deterministic workload of the drop-in proof programs (dropin_c_program.c and
 * dropin_cxx_program.cc). Plain C99, also valid C++17. It knows nothing of leveldb-bloom:
 * the two programs are ordinary LevelDB programs.
 *
 * Keys: key 0 is the empty key; key i > 0 is 4 bytes (big-endian) of a bijective scramble
 * of i, so keys are unique and spread over the key space, then a tail of 0..7
 * pseudo-random bytes (>= 0x80 included), so every hash tail length comes up.
 * Absent keys: even j -> the key shape of index WL_KEYS + j (a prefix no present key has);
 * odd j -> a present key with the suffix ff 80 appended (inside the tables' key ranges).
 *
 * Phase 1 (one DB open): put keys 0..WL_PHASE1_KEYS-1 (version 1), overwrite every i % 3 == 0
 * (version 2), delete every i % 10 == 5; compact.
 * Phase 2 (reopen): put keys WL_PHASE1_KEYS..WL_KEYS-1 (version 1), overwrite every
 * i % 7 == 0 (version 3), delete every i % 13 == 6; compact.
 * wl_final_version() says what a reader must find afterwards.
 */
#ifndef LEVELDB_BLOOM_DROPIN_WORKLOAD_H
#define LEVELDB_BLOOM_DROPIN_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define WL_PHASE1_KEYS 50000u
#define WL_KEYS 60000u
#define WL_ABSENT_LOOKUPS 50000u
#define WL_KEY_MAX 16u
#define WL_VALUE_MAX 160u
/* Large enough that no memtable fills up during a phase: every table file is then written
 * by CompactRange in the foreground order of operations, not by a background compaction
 * racing the writes, and the table files are the same in every run. */
#define WL_WRITE_BUFFER_SIZE (64u << 20)
#define WL_BITS_PER_KEY 10

static inline uint64_t wl_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A bijection of 32-bit integers (odd multiplier, then xorshift): unique key prefixes. */
static inline uint32_t wl_scramble(uint32_t i) {
  uint32_t x = i * 0x9e3779b1u;
  return x ^ (x >> 16);
}

/* Writes key i into out (WL_KEY_MAX bytes) and returns its length. */
static inline size_t wl_key(uint32_t i, char *out) {
  uint32_t s;
  uint64_t r;
  size_t tail, k;
  if (i == 0) return 0;
  s = wl_scramble(i);
  out[0] = (char)(unsigned char)(s >> 24);
  out[1] = (char)(unsigned char)(s >> 16);
  out[2] = (char)(unsigned char)(s >> 8);
  out[3] = (char)(unsigned char)s;
  r = wl_mix64(i);
  tail = (size_t)(r % 8u);
  r = wl_mix64(r);
  for (k = 0; k < tail; k++) out[4 + k] = (char)(unsigned char)(r >> (8 * k));
  return 4 + tail;
}

/* Writes absent key j into out (WL_KEY_MAX bytes) and returns its length. */
static inline size_t wl_absent_key(uint32_t j, char *out) {
  size_t n;
  if (j % 2 == 0) return wl_key(WL_KEYS + j, out);
  n = wl_key(1 + j % (WL_KEYS - 1), out);
  out[n] = (char)0xff;
  out[n + 1] = (char)0x80;
  return n + 2;
}

/* Writes version v of key i's value into out (WL_VALUE_MAX bytes) and returns its length
 * (0..WL_VALUE_MAX-1: empty values included). */
static inline size_t wl_value(uint32_t i, uint32_t v, char *out) {
  uint64_t r = wl_mix64(((uint64_t)i << 8) | v);
  size_t len = (size_t)(r % WL_VALUE_MAX), k;
  for (k = 0; k < len; k++) {
    if (k % 8 == 0) r = wl_mix64(r);
    out[k] = (char)(unsigned char)(r >> (8 * (k % 8)));
  }
  return len;
}

/* The version of key i a reader must find after both phases; 0 = absent (deleted). */
static inline uint32_t wl_final_version(uint32_t i) {
  if (i % 13 == 6) return 0;
  if (i % 7 == 0) return 3;
  if (i < WL_PHASE1_KEYS && i % 10 == 5) return 0;
  if (i < WL_PHASE1_KEYS && i % 3 == 0) return 2;
  return 1;
}

/* FNV-1a 64 over a (length, bytes) record: lengths as 4 bytes LE, so that the digest of a
 * sequence of pairs determines the pairs. */
static inline uint64_t wl_fnv(uint64_t h, const char *p, size_t n) {
  size_t k;
  for (k = 0; k < 4; k++) h = (h ^ (uint64_t)((n >> (8 * k)) & 0xff)) * 0x100000001b3ull;
  for (k = 0; k < n; k++) h = (h ^ (uint64_t)(unsigned char)p[k]) * 0x100000001b3ull;
  return h;
}
#define WL_FNV_INIT 0xcbf29ce484222325ull

#endif /* LEVELDB_BLOOM_DROPIN_WORKLOAD_H */
