/* A program that uses an installed leveldb-bloom, built each way a user would find it
 * (find_package, pkg-config, add_subdirectory). It checks one filter against the bytes
 * LevelDB 1.23 builds for these keys (tests/vectors/leveldb_filters.json, made by LevelDB)
 * and the header's version against the library's. */
#include <stdio.h>
#include <string.h>

#include "leveldb_bloom.h"

int main(void) {
  static const uint8_t leveldb_filter[] = {0x11, 0x40, 0x00, 0x41, 0x44, 0x10, 0x40, 0x10, 0x06};
  const char *keys[] = {"hello", "world"};
  const size_t lens[] = {5, 5};
  uint8_t out[16];
  size_t len = 0;
  leveldb_bloom_policy *policy = leveldb_bloom_policy_create(10);
  if (policy == NULL) return 1;
  int status = leveldb_bloom_create_filter(policy, keys, lens, 2, out, sizeof out, &len);
  int ok = status == LEVELDB_BLOOM_OK && len == sizeof leveldb_filter &&
           memcmp(out, leveldb_filter, len) == 0 &&
           strcmp(leveldb_bloom_version(), LEVELDB_BLOOM_VERSION) == 0;
  leveldb_bloom_policy_destroy(policy);
  printf("consumer (leveldb-bloom %s): %s\n", leveldb_bloom_version(), ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
