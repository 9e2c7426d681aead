// The tests' oracle: what LevelDB's own Table iteration shows of a table file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/table_builder.h>

#include "support.h"

// What LevelDB's own leveldb::Table iteration counts in the table file at `path`
// (cpp_tests/support), or -1 if LevelDB cannot open or iterate it.
extern "C" int64_t leveldb_bloom_oracle_table_entries(const char* path) {
  std::string error;
  return support::leveldb_table_entries(path, &error);
}

// Writes a table of `n` user keys (sorted, as TableBuilder requires), each with the value
// "v", with LevelDB's own TableBuilder and Bloom policy at `bits_per_key` (no filter if 0).
// Returns 0, or -1 on failure.
extern "C" int leveldb_bloom_oracle_write_table(const char* path, const char* const* keys,
                                                const size_t* lens, size_t n,
                                                int bits_per_key) {
  leveldb::Env* env = leveldb::Env::Default();
  leveldb::WritableFile* file = nullptr;
  if (!env->NewWritableFile(path, &file).ok()) return -1;
  std::unique_ptr<leveldb::WritableFile> owned(file);
  std::unique_ptr<const leveldb::FilterPolicy> policy(
      bits_per_key > 0 ? leveldb::NewBloomFilterPolicy(bits_per_key) : nullptr);
  leveldb::Options options;
  options.filter_policy = policy.get();
  leveldb::TableBuilder builder(options, file);
  for (size_t i = 0; i < n; i++) builder.Add(leveldb::Slice(keys[i], lens[i]), "v");
  if (!builder.Finish().ok() || !file->Close().ok()) return -1;
  return 0;
}

// The filter LevelDB's own Bloom policy (NewBloomFilterPolicy(bits_per_key)) builds for the
// n keys, written to `out` (room for `capacity` bytes); its length, or -1 if it does not fit.
extern "C" int64_t leveldb_bloom_oracle_bloom_filter(const char* const* keys, const size_t* lens,
                                                     size_t n, int bits_per_key, char* out,
                                                     size_t capacity) {
  std::unique_ptr<const leveldb::FilterPolicy> policy(leveldb::NewBloomFilterPolicy(bits_per_key));
  std::vector<leveldb::Slice> slices;
  for (size_t i = 0; i < n; i++) slices.emplace_back(keys[i], lens[i]);
  std::string filter;
  policy->CreateFilter(slices.data(), static_cast<int>(n), &filter);
  if (filter.size() > capacity) return -1;
  filter.copy(out, filter.size());
  return static_cast<int64_t>(filter.size());
}
