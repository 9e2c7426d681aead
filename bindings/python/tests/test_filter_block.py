"""Filter block builder round trips and documented misuse."""

from __future__ import annotations

import random
import struct

import pytest

import leveldb_bloom as lb
from conftest import rand_bytes

BASE = 2048  # LevelDB's kFilterBase (kFilterBaseLg = 11)


def expected_block(policy, blocks):
    """The filter block LevelDB's format describes for data blocks
    [(offset, [keys...]), ...] in order: one filter per 2 KiB of table offset (empty when
    no keys), then the filter offsets, the array offset (fixed32 LE each) and the base lg.
    Filters come from create_filter, itself checked against LevelDB's vectors."""
    filters = []  # keys per filter index
    pending = []
    for offset, keys in blocks:
        index = offset // BASE
        while index > len(filters):
            filters.append(pending)
            pending = []
        pending = pending + list(keys)
    if pending:
        filters.append(pending)
    out = b""
    offsets = []
    for keys in filters:
        offsets.append(len(out))
        if keys:
            out += policy.create_filter(keys)
    array_offset = len(out)
    out += b"".join(struct.pack("<I", o) for o in offsets)
    return out + struct.pack("<I", array_offset) + bytes([11])


def build(policy, blocks):
    with lb.FilterBlockBuilder(policy) as b:
        for offset, keys in blocks:
            b.start_block(offset)
            for k in keys:
                b.add_key(k)
        return b.finish()


def test_empty_builder_is_leveldbs_empty_block():
    # LevelDB's filter_block_test EmptyBuilder: "\x00\x00\x00\x00\x0b".
    with lb.BloomPolicy(10) as p, lb.FilterBlockBuilder(p) as b:
        assert b.finish() == b"\x00\x00\x00\x00\x0b"
    with lb.BloomPolicy(10) as p:
        for off in (0, 100000):
            assert lb.filter_block_may_match(p, b"\x00\x00\x00\x00\x0b", off, b"foo")


ROUND_TRIPS = [(lb.BloomPolicy, b) for b in (0, 1, 10, 16, 100)] + [
    (lb.CompactPolicy, b) for b in (0, 2.5, 10, 16, 32)
]


@pytest.mark.parametrize("make, bits_per_key", ROUND_TRIPS)
def test_round_trip(make, bits_per_key):
    """Each format's filters in LevelDB's filter block layout: every key found, single and
    batch answers alike, most absent keys rejected at 10 bits per key and more."""
    rng = random.Random(f"{make.__name__}-{bits_per_key}")
    blocks = []
    offset = 0
    for i in range(12):
        n = rng.choice([0, 1, 5, 50, 200])
        keys = [b"block%d-key%d-" % (i, j) + rand_bytes(rng, rng.randrange(8)) for j in range(n)]
        blocks.append((offset, keys))
        offset += rng.choice([100, 1500, 2048, 3000, 9000])
    with make(bits_per_key) as p:
        block = build(p, blocks)
        assert block == expected_block(p, blocks)
        offsets, keys = [], []
        for off, ks in blocks:
            for k in ks:
                assert lb.filter_block_may_match(p, block, off, k)
                offsets.append(off)
                keys.append(k)
        assert all(lb.filter_block_may_match_batch(p, memoryview(block), offsets, keys))
        # Absent keys: batch == single, and at 10+ bits per key most are rejected.
        absent = [b"absent-%d" % i for i in range(len(keys))]
        single = [lb.filter_block_may_match(p, block, o, k) for o, k in zip(offsets, absent)]
        assert lb.filter_block_may_match_batch(p, block, offsets, absent) == single
        if bits_per_key >= 10 and keys:
            least = 0.95 if make is lb.CompactPolicy else 0.5
            assert single.count(False) > least * len(single)
    if make is lb.CompactPolicy:
        # A Bloom policy (as stock LevelDB) reads the block: "may match" for any key in a
        # data block with keys (its filter is compact, or all zero).
        with lb.BloomPolicy(10) as b:
            assert all(lb.filter_block_may_match_batch(b, block, offsets, keys))
            assert all(lb.filter_block_may_match_batch(b, block, offsets, absent))


def test_blocks_without_keys_match_nothing():
    """An empty filter (a data block with no keys) answers "no match", as LevelDB's reader."""
    with lb.BloomPolicy(10) as p:
        block = build(p, [(0, [b"a"]), (5000, []), (9000, [b"b"])])
        assert lb.filter_block_may_match(p, block, 0, b"a")
        assert not lb.filter_block_may_match(p, block, 5000, b"a")
        assert lb.filter_block_may_match(p, block, 9000, b"b")
        # Past the last filter: "may match" (errors are potential matches).
        assert lb.filter_block_may_match(p, block, 10**9, b"zzz")


def test_batch_offsets_int_broadcast_and_length_mismatch():
    with lb.BloomPolicy(10) as p:
        block = build(p, [(0, [b"a", b"b"])])
        assert lb.filter_block_may_match_batch(p, block, 0, [b"a", b"b"]) == [True, True]
        assert lb.filter_block_may_match_batch(p, block, 0, []) == []
        with pytest.raises(ValueError, match="2 block offsets for 1 keys"):
            lb.filter_block_may_match_batch(p, block, [0, 0], [b"a"])
        with pytest.raises(ValueError):
            lb.filter_block_may_match_batch(p, block, [-1], [b"a"])
        with pytest.raises(OverflowError):
            lb.filter_block_may_match(p, block, 2**64, b"a")


def test_malformed_blocks_may_match():
    with lb.BloomPolicy(10) as p:
        for block in (b"", b"\x0b", b"\x00\x00\x00", b"\xff" * 5, b"\x00\x00\x00\x00\x0b\x00"):
            assert lb.filter_block_may_match(p, block, 0, b"k")
            assert lb.filter_block_may_match_batch(p, block, [0, 4096], [b"k", b""]) == [True, True]


def test_offset_backwards():
    with lb.BloomPolicy(10) as p, lb.FilterBlockBuilder(p) as b:
        b.start_block(0)
        b.add_key(b"a")
        b.start_block(5000)  # filter index 2
        with pytest.raises(lb.OffsetBackwardsError) as e:
            b.start_block(3000)  # index 1: before the started block
        assert e.value.status == lb.Status.OFFSET_BACKWARDS
        assert e.value.message == lb.status_message(lb.Status.OFFSET_BACKWARDS)
        assert isinstance(e.value, lb.LevelDBBloomError)
        # Nothing changed: the builder goes on.
        b.start_block(5000)  # same index again is allowed
        b.add_key(b"b")
        block = b.finish()
        assert block == expected_block(p, [(0, [b"a"]), (5000, [b"b"])])


def test_already_finished():
    with lb.BloomPolicy(10) as p, lb.FilterBlockBuilder(p) as b:
        b.start_block(0)
        b.add_key(b"a")
        first = b.finish()
        assert b.finish() == first  # finish again: the same block
        with pytest.raises(lb.AlreadyFinishedError) as e:
            b.add_key(b"b")
        assert e.value.status == lb.Status.ALREADY_FINISHED == 5
        with pytest.raises(lb.AlreadyFinishedError):
            b.start_block(4096)
        with pytest.raises(lb.AlreadyFinishedError):
            b.add_keys([b"c"])
        assert b.finish() == first


def test_start_block_offset_range():
    with lb.BloomPolicy(10) as p, lb.FilterBlockBuilder(p) as b:
        with pytest.raises(ValueError):
            b.start_block(-1)
        with pytest.raises(OverflowError):
            b.start_block(2**64)
        with pytest.raises(TypeError):
            b.start_block(1.5)  # type: ignore[arg-type]
        # (No test with a huge offset: the library generates every empty filter up to
        # it one by one, so start_block(2**64 - 1) runs out of memory rather than
        # answering TOO_LARGE; reported upstream.)


def test_builder_counts_into_policy_stats():
    with lb.BloomPolicy(10).counted() as p:
        p.reset_stats()
        build(p, [(0, [b"a", b"b"]), (3000, []), (5000, [b"c"])])
        s = p.stats()
        assert (s.filters_built, s.keys_added) == (2, 3)
