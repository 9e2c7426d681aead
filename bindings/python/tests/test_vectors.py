"""The filters and answers real LevelDB computed (tests/vectors/leveldb_filters.json) must
come out of the Python binding exactly."""

from __future__ import annotations

import pytest

import leveldb_bloom as lb
from conftest import VECTORS_DATA

FILTERS = VECTORS_DATA["filters"]
MALFORMED = VECTORS_DATA["malformed"]
KEY_SETS = VECTORS_DATA["key_sets_by_name"]


def test_file_is_complete(vectors):
    """The file covers what it should: a truncated file must not pass quietly."""
    assert vectors["format"] == 1
    assert "LevelDB 1.23" in vectors["oracle"]
    assert {f["bits_per_key"] for f in vectors["filters"]} == {0, 1, 10, 16, 100}
    assert set(KEY_SETS) >= {
        "empty", "one_key", "hello_world", "duplicates", "empty_key", "high_bytes",
        "random_100", "random_1000",
    }
    assert len(vectors["filters"]) == 5 * len(KEY_SETS)
    assert len(KEY_SETS["random_1000"]["keys"]) == 1000
    assert {len(bytes.fromhex(m["filter"])) for m in MALFORMED} >= {0, 1, 2, 3}
    answers = [a for f in FILTERS for a in f["answers"]]
    assert True in answers and False in answers


def test_policy_name(vectors):
    with lb.BloomPolicy(10) as p:
        assert p.name == vectors["policy_name"] == "leveldb.BuiltinBloomFilter2"


def _case_id(case):
    return f"{case['key_set']}-bpk{case['bits_per_key']}"


@pytest.mark.parametrize("case", FILTERS, ids=_case_id)
def test_filter_bytes_match_leveldb(case):
    keys = KEY_SETS[case["key_set"]]["keys"]
    expected = bytes.fromhex(case["filter"])
    with lb.BloomPolicy(case["bits_per_key"]) as p:
        assert p.filter_len(len(keys)) == len(expected)
        assert p.create_filter(keys) == expected
        # The same keys as bytearray / memoryview, and from a generator.
        assert p.create_filter(bytearray(k) for k in keys) == expected
        assert p.create_filter([memoryview(k) for k in keys]) == expected


@pytest.mark.parametrize("case", FILTERS, ids=_case_id)
def test_answers_match_leveldb(case):
    probes = KEY_SETS[case["key_set"]]["probes"]
    f = bytes.fromhex(case["filter"])
    with lb.BloomPolicy(case["bits_per_key"]) as p:
        assert [p.may_match(k, f) for k in probes] == case["answers"]
        assert p.may_match_batch(probes, f) == case["answers"]
        # Every key of the set matches (LevelDB's answers say so too).
        keys = set(KEY_SETS[case["key_set"]]["keys"])
        for k, a in zip(probes, case["answers"]):
            if k in keys:
                assert a


@pytest.mark.parametrize("case", MALFORMED, ids=lambda m: "filter-" + (m["filter"] or "empty"))
@pytest.mark.parametrize("bits_per_key", [0, 10, 100])
def test_malformed_filters_match_leveldb(case, bits_per_key):
    """Queries ignore the policy's bits per key: every policy answers as LevelDB did."""
    probes = [bytes.fromhex(k) for k in case["probes"]]
    f = bytes.fromhex(case["filter"])
    with lb.BloomPolicy(bits_per_key) as p:
        assert [p.may_match(k, f) for k in probes] == case["answers"]
        assert p.may_match_batch(probes, bytearray(f)) == case["answers"]
