/*
 * A database opened as an ordinary C program opens one (seccomp_program.c, two_copies.c):
 * LevelDB's C API, 10 bits per key Bloom filters from leveldb_filterpolicy_create_bloom (the
 * call the drop-in serves), created if missing, one write and one read options. It knows
 * nothing of leveldb-bloom.
 */
#ifndef LEVELDB_BLOOM_DROPIN_C_API_DB_H
#define LEVELDB_BLOOM_DROPIN_C_API_DB_H

#include <stddef.h>

#include <leveldb/c.h>

struct c_api_db {
  leveldb_options_t *options;
  leveldb_filterpolicy_t *policy;
  leveldb_writeoptions_t *write;
  leveldb_readoptions_t *read;
  leveldb_t *db;
};

/* Opens `dir` into `d`: its db, or NULL with *err set (the rest is then left to the exit). */
static leveldb_t *c_api_db_open(struct c_api_db *d, const char *dir, char **err) {
  d->options = leveldb_options_create();
  d->policy = leveldb_filterpolicy_create_bloom(10);
  leveldb_options_set_filter_policy(d->options, d->policy);
  leveldb_options_set_create_if_missing(d->options, 1);
  d->write = leveldb_writeoptions_create();
  d->read = leveldb_readoptions_create();
  d->db = leveldb_open(d->options, dir, err);
  return d->db;
}

static void c_api_db_close(struct c_api_db *d) {
  leveldb_close(d->db);
  leveldb_readoptions_destroy(d->read);
  leveldb_writeoptions_destroy(d->write);
  leveldb_options_destroy(d->options);
  leveldb_filterpolicy_destroy(d->policy);
}

#endif
