"""An ordinary plyvel program: it knows nothing of leveldb-bloom.

Usage: python program.py DB_DIR
       python program.py --read DB_DIR   (every pair counted and digested)

Writes 100,000 keys with 10 bits per key Bloom filters, deletes every tenth, compacts,
reopens and reads every key back, then asks for 100,000 absent keys that fall inside the
tables' key range. The whole database is in the memtable until compact_range writes it, so
the tables are the same on every run. Prints name=value lines (counts and a digest of every
pair read back) for ../carrier_proof.py to compare.
"""

import hashlib
import sys

import plyvel

N = 100_000
BITS_PER_KEY = 10


def key(i):
    return b"key%08d" % i


def main(path):
    db = plyvel.DB(path, create_if_missing=True, error_if_exists=True,
                   bloom_filter_bits=BITS_PER_KEY, write_buffer_size=256 << 20)
    with db.write_batch() as batch:
        for i in range(N):
            batch.put(key(i), b"value-%d" % (i * 7919))
    deletes = 0
    for i in range(0, N, 10):
        db.delete(key(i))
        deletes += 1
    db.compact_range()
    db.close()

    db = plyvel.DB(path, bloom_filter_bits=BITS_PER_KEY)
    digest = hashlib.sha256()
    present = 0
    for i in range(N):
        value = db.get(key(i))
        expected = None if i % 10 == 0 else b"value-%d" % (i * 7919)
        if value != expected:
            sys.exit(f"program.py: key {i}: read {value!r}, expected {expected!r}")
        if value is not None:
            present += 1
            digest.update(key(i) + b"=" + value + b"\n")
    absent = 0
    for i in range(N):
        if db.get(key(i) + b"~") is not None:
            sys.exit(f"program.py: absent key {i} found")
        absent += 1
    db.close()
    print(f"puts={N}\ndeletes={deletes}\npresent_lookups={present}\n"
          f"absent_lookups={absent}\ndigest={digest.hexdigest()}")


def read(path):
    digest = hashlib.sha256()
    count = 0
    with plyvel.DB(path) as db:
        for k, v in db:
            digest.update(k + b"=" + v + b"\n")
            count += 1
    print(f"pairs={count}\ndigest={digest.hexdigest()}")


if __name__ == "__main__":
    if sys.argv[1] == "--read":
        read(sys.argv[2])
    else:
        main(sys.argv[1])
