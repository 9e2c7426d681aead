// LevelDB 1.23's table filter block classes, declared exactly as its
// table/filter_block.h does (same members in the same order: the static archive
// libleveldb.a, which exports them although Debian installs no header, addresses the
// members at these offsets). Programs that include this must link libleveldb.a.
#ifndef LEVELDB_BLOOM_CPP_TESTS_LEVELDB_FILTER_BLOCK_H_
#define LEVELDB_BLOOM_CPP_TESTS_LEVELDB_FILTER_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "leveldb/filter_policy.h"
#include "leveldb/slice.h"

namespace leveldb {

class FilterBlockBuilder {
 public:
  explicit FilterBlockBuilder(const FilterPolicy*);

  FilterBlockBuilder(const FilterBlockBuilder&) = delete;
  FilterBlockBuilder& operator=(const FilterBlockBuilder&) = delete;

  void StartBlock(uint64_t block_offset);
  void AddKey(const Slice& key);
  Slice Finish();

 private:
  void GenerateFilter();

  const FilterPolicy* policy_;
  std::string keys_;             // Flattened key contents
  std::vector<size_t> start_;    // Starting index in keys_ of each key
  std::string result_;           // Filter data computed so far
  std::vector<Slice> tmp_keys_;  // policy_->CreateFilter() argument
  std::vector<uint32_t> filter_offsets_;
};

class FilterBlockReader {
 public:
  // REQUIRES: "contents" and *policy must stay live while *this is live.
  FilterBlockReader(const FilterPolicy* policy, const Slice& contents);
  bool KeyMayMatch(uint64_t block_offset, const Slice& key);

 private:
  const FilterPolicy* policy_;
  const char* data_;    // Pointer to filter data (at block start)
  const char* offset_;  // Pointer to beginning of offset array (at block end)
  size_t num_;          // Number of entries in offset array
  size_t base_lg_;      // Encoding parameter (see kFilterBaseLg in .cc file)
};

}  // namespace leveldb

// Where the archive's code addresses the members: the declaration order above with the
// standard library's sizes (libstdc++: a string is {data, size, 16-byte buffer}, a vector
// {begin, end, capacity}). On x86-64 the builder's constructor writes 0x00..0x90 and the
// reader's 0x00..0x28 (checked in the disassembly); FilterBlockLayout checks every offset on
// each architecture the suites run on.
namespace filter_block_layout {
constexpr size_t kPtr = sizeof(void*);
constexpr size_t kString = sizeof(std::string);
constexpr size_t kVector = sizeof(std::vector<size_t>);
// Inside a string or a vector.
constexpr size_t kStringData = 0, kStringSize = kPtr, kStringBuffer = 2 * kPtr;
constexpr size_t kVectorBegin = 0, kVectorEnd = kPtr;
// FilterBlockBuilder's members.
constexpr size_t kBuilderPolicy = 0;
constexpr size_t kBuilderKeys = kPtr;
constexpr size_t kBuilderStart = kBuilderKeys + kString;
constexpr size_t kBuilderResult = kBuilderStart + kVector;
constexpr size_t kBuilderTmpKeys = kBuilderResult + kString;
constexpr size_t kBuilderFilterOffsets = kBuilderTmpKeys + kVector;
constexpr size_t kBuilderSize = kBuilderFilterOffsets + kVector;
// FilterBlockReader's members.
constexpr size_t kReaderPolicy = 0, kReaderData = kPtr, kReaderOffset = 2 * kPtr;
constexpr size_t kReaderNum = 3 * kPtr, kReaderBaseLg = 4 * kPtr, kReaderSize = 5 * kPtr;
}  // namespace filter_block_layout

static_assert(sizeof(leveldb::FilterBlockBuilder) == filter_block_layout::kBuilderSize,
              "FilterBlockBuilder layout");
static_assert(sizeof(leveldb::FilterBlockReader) == filter_block_layout::kReaderSize,
              "FilterBlockReader layout");
static_assert(sizeof(void*) != 8 || filter_block_layout::kBuilderSize == 0x90,
              "FilterBlockBuilder layout on 64-bit");

#endif  // LEVELDB_BLOOM_CPP_TESTS_LEVELDB_FILTER_BLOCK_H_
