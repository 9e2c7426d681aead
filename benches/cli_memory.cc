// The inputs of the command's memory benchmark (scripts/bench memory), written by LevelDB
// 1.23 itself: a database's table of about MEGABYTES as one file (internal keys, Bloom
// filters of the user keys, as LevelDB's compaction writes them), or a database of about
// MEGABYTES written through leveldb::DB with 32 MiB memtables.
//
//   leveldb_bloom_cli_memory table FILE MEGABYTES
//   leveldb_bloom_cli_memory database DIR MEGABYTES
//   leveldb_bloom_cli_memory compact DIR      LevelDB's work in upgrade, alone: paranoid
//                                             checks, Bloom filters at 10 bits per key, the
//                                             first and last records written again and the
//                                             whole range compacted
//   leveldb_bloom_cli_memory iterate DIR      LevelDB's full checked read: paranoid checks,
//                                             every record iterated with its blocks'
//                                             checksums verified, nothing cached
//
// Keys: 16 bytes, big-endian counters; values: 100 pseudo-random bytes (incompressible).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/table_builder.h>

namespace {

// LevelDB's InternalFilterPolicy: filters of the user keys of internal keys.
class UserKeyFilter : public leveldb::FilterPolicy {
 public:
  const char* Name() const override { return bloom_->Name(); }
  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override {
    std::vector<leveldb::Slice> user(keys, keys + n);
    for (auto& k : user) k = leveldb::Slice(k.data(), k.size() - 8);
    bloom_->CreateFilter(user.data(), n, dst);
  }
  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override {
    return bloom_->KeyMayMatch(key, filter);
  }

 private:
  std::unique_ptr<const leveldb::FilterPolicy> bloom_{leveldb::NewBloomFilterPolicy(10)};
};

struct Records {
  uint64_t x = 88172645463325252ull, i = 0;
  char key[24], value[100];
  void Next() {
    for (int k = 0; k < 16; k++) key[k] = static_cast<char>((i >> (8 * (15 - k))) & 0xff);
    for (int v = 0; v < 100; v += 4) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      memcpy(value + v, &x, 4);
    }
    const uint64_t tag = ((i + 1) << 8) | 1;  // sequence i + 1, a value
    memcpy(key + 16, &tag, 8);
    i++;
  }
};

int Fail(const leveldb::Status& s) {
  fprintf(stderr, "leveldb_bloom_cli_memory: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "iterate") == 0) {
    leveldb::Options options;
    options.paranoid_checks = true;
    leveldb::DB* db;
    leveldb::Status s = leveldb::DB::Open(options, argv[2], &db);
    if (!s.ok()) return Fail(s);
    leveldb::ReadOptions read;
    read.verify_checksums = true;
    read.fill_cache = false;
    uint64_t records = 0, bytes = 0;
    {
      std::unique_ptr<leveldb::Iterator> it(db->NewIterator(read));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        records++;
        bytes += it->key().size() + it->value().size();
      }
      s = it->status();
    }
    delete db;
    if (!s.ok()) return Fail(s);
    printf("%llu records, %llu bytes\n", static_cast<unsigned long long>(records),
           static_cast<unsigned long long>(bytes));
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "compact") == 0) {
    std::unique_ptr<const leveldb::FilterPolicy> policy(leveldb::NewBloomFilterPolicy(10));
    leveldb::Options options;
    options.filter_policy = policy.get();
    options.paranoid_checks = true;
    leveldb::DB* db;
    leveldb::Status s = leveldb::DB::Open(options, argv[2], &db);
    if (!s.ok()) return Fail(s);
    // As upgrade has it: the first and last records written again, so that the compaction
    // rewrites the deepest level too, then the whole range compacted.
    std::string first[2], last[2];
    {
      std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
      it->SeekToFirst();
      if (it->Valid()) first[0] = it->key().ToString(), first[1] = it->value().ToString();
      it->SeekToLast();
      if (it->Valid()) last[0] = it->key().ToString(), last[1] = it->value().ToString();
    }
    if (s.ok()) s = db->Put(leveldb::WriteOptions(), first[0], first[1]);
    if (s.ok()) s = db->Put(leveldb::WriteOptions(), last[0], last[1]);
    db->CompactRange(nullptr, nullptr);
    if (s.ok()) s = db->Put(leveldb::WriteOptions(), first[0], first[1]);
    delete db;
    return s.ok() ? 0 : Fail(s);
  }
  if (argc != 4 || (strcmp(argv[1], "table") != 0 && strcmp(argv[1], "database") != 0)) {
    fprintf(stderr,
            "usage: %s table FILE MEGABYTES | database DIR MEGABYTES | compact DIR | "
            "iterate DIR\n",
            argv[0]);
    return 2;
  }
  const uint64_t bytes = strtoull(argv[3], nullptr, 10) << 20;
  Records r;
  if (strcmp(argv[1], "table") == 0) {
    UserKeyFilter policy;
    leveldb::Options options;
    options.filter_policy = &policy;
    leveldb::WritableFile* file;
    leveldb::Status s = leveldb::Env::Default()->NewWritableFile(argv[2], &file);
    if (!s.ok()) return Fail(s);
    leveldb::TableBuilder table(options, file);
    for (uint64_t written = 0; written < bytes; written += 124) {
      r.Next();
      table.Add(leveldb::Slice(r.key, 24), leveldb::Slice(r.value, 100));
    }
    s = table.Finish();
    if (s.ok()) s = file->Close();
    delete file;
    if (!s.ok()) return Fail(s);
    printf("%llu entries, %llu bytes\n", static_cast<unsigned long long>(r.i),
           static_cast<unsigned long long>(table.FileSize()));
    return 0;
  }
  std::unique_ptr<const leveldb::FilterPolicy> policy(leveldb::NewBloomFilterPolicy(10));
  leveldb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  options.filter_policy = policy.get();
  options.write_buffer_size = 32 << 20;
  leveldb::DB* db;
  leveldb::Status s = leveldb::DB::Open(options, argv[2], &db);
  if (!s.ok()) return Fail(s);
  for (uint64_t written = 0; written < bytes && s.ok(); written += 116) {
    r.Next();
    s = db->Put(leveldb::WriteOptions(), leveldb::Slice(r.key, 16), leveldb::Slice(r.value, 100));
  }
  delete db;
  if (!s.ok()) return Fail(s);
  printf("%llu records\n", static_cast<unsigned long long>(r.i));
  return 0;
}
