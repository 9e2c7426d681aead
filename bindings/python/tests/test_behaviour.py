"""Batch == single, statistics, no false negatives."""

from __future__ import annotations

import random

import pytest

import leveldb_bloom as lb
from conftest import rand_bytes


def random_keys(rng, n, max_len=40):
    return [rand_bytes(rng, rng.randrange(max_len + 1)) for _ in range(n)]


@pytest.mark.parametrize("bits_per_key", [0, 1, 2, 5, 10, 16, 33, 100])
def test_no_false_negatives(bits_per_key):
    rng = random.Random(1000 + bits_per_key)
    with lb.BloomPolicy(bits_per_key) as p:
        for n in (0, 1, 2, 7, 64, 500, 3000):
            keys = random_keys(rng, n)
            f = p.create_filter(keys)
            assert len(f) == p.filter_len(n)
            assert all(p.may_match(k, f) for k in keys)
            assert all(p.may_match_batch(keys, f))


@pytest.mark.parametrize("bits_per_key", [0, 1, 10, 100])
def test_batch_equals_single(bits_per_key):
    rng = random.Random(bits_per_key)
    with lb.BloomPolicy(bits_per_key) as p:
        for n in (1, 10, 100, 1000):
            keys = random_keys(rng, n)
            f = p.create_filter(keys)
            probes = keys[: n // 2] + random_keys(rng, 300)
            single = [p.may_match(k, f) for k in probes]
            assert p.may_match_batch(probes, f) == single
            if bits_per_key >= 10:
                assert single.count(False) > 0
        # And on arbitrary (malformed) filters.
        for _ in range(200):
            f = rand_bytes(rng, rng.randrange(12))
            probes = random_keys(rng, 20, 8)
            assert p.may_match_batch(probes, f) == [p.may_match(k, f) for k in probes]
        assert p.may_match_batch([], b"\x00\x00") == []


def test_false_positive_rate_is_about_one_percent():
    rng = random.Random(7)
    with lb.BloomPolicy(10) as p:
        f = p.create_filter(random_keys(rng, 10000, 24))
        absent = [b"\xff" * 25 + rand_bytes(rng, 8) for _ in range(20000)]
        rate = p.may_match_batch(absent, f).count(True) / len(absent)
        assert rate < 0.03


def test_stats_count_filters_keys_queries():
    lb.reset_global_stats()
    with lb.BloomPolicy(10).counted() as p:
        assert p.stats() == lb.Stats(0, 0, 0, 0)
        f = p.create_filter([b"a", b"b", b"b"])
        p.create_filter([])
        s = p.stats()
        assert (s.filters_built, s.keys_added) == (2, 3)
        answers = [p.may_match(k, f) for k in (b"a", b"b", b"x", b"y", b"z")]
        answers += p.may_match_batch([b"a", b"q1", b"q2", b"q3"], f)
        s = p.stats()
        assert s.queries == 9
        assert s.no_match == answers.count(False)
        assert s.no_match > 0
        block = lb.FilterBlockBuilder(p)
        block.start_block(0)
        block.add_key(b"k")
        data = block.finish()
        block.close()
        lb.filter_block_may_match(p, data, 0, b"k")
        lb.filter_block_may_match_batch(p, data, 0, [b"k", b"k"])
        s = p.stats()
        assert (s.filters_built, s.keys_added, s.queries) == (3, 4, 12)
        # Global: this is the only policy that did anything since the reset.
        assert lb.global_stats() == s
        assert isinstance(s, tuple) and s._asdict()["queries"] == 12
        p.reset_stats()
        assert p.stats() == lb.Stats(0, 0, 0, 0)
        assert lb.global_stats() == s  # per-policy reset leaves the global counts
    # Destroyed policies stay in the global counts.
    assert lb.global_stats() == s
    lb.reset_global_stats()
    assert lb.global_stats() == lb.Stats(0, 0, 0, 0)


def test_only_counted_policies_keep_statistics():
    lb.reset_global_stats()
    with lb.BloomPolicy(10) as p, p.counted() as c:
        assert isinstance(c, lb.BloomPolicy) and c.bits_per_key == 10
        f = p.create_filter([b"a", b"b"])
        assert c.create_filter([b"a", b"b"]) == f
        assert [c.may_match(k, f) for k in (b"a", b"x", b"y")] == [
            p.may_match(k, f) for k in (b"a", b"x", b"y")
        ]
        for call in (p.stats, p.reset_stats):
            with pytest.raises(lb.NotCountedError) as e:
                call()
            assert e.value.status == lb.Status.NOT_COUNTED
        assert c.stats().filters_built == 1 and c.stats().queries == 3
        # The uncounted policy's work is in no count, the global one included.
        assert lb.global_stats() == c.stats()


def test_stats_per_policy_are_separate():
    with lb.BloomPolicy(10).counted() as a, lb.BloomPolicy(10).counted() as b:
        a.create_filter([b"x"])
        assert a.stats().filters_built == 1
        assert b.stats().filters_built == 0
