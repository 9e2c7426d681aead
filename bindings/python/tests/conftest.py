"""Shared fixtures: the vectors computed by real LevelDB (cpp_tests/vectors_test.cc)."""

from __future__ import annotations

import json
import os
import pathlib
import random
from typing import Any, Dict

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
VECTORS = pathlib.Path(
    os.environ.get("LEVELDB_BLOOM_VECTORS_FILE") or REPO / "tests" / "vectors" / "leveldb_filters.json"
)


def load_vectors() -> Dict[str, Any]:
    with open(VECTORS, encoding="utf-8") as f:
        data = json.load(f)
    key_sets = {}
    for s in data["key_sets"]:
        key_sets[s["name"]] = {
            "keys": [bytes.fromhex(k) for k in s["keys"]],
            "probes": [bytes.fromhex(k) for k in s["probes"]],
        }
    data["key_sets_by_name"] = key_sets
    return data


VECTORS_DATA = load_vectors()


def rand_bytes(rng: random.Random, n: int) -> bytes:
    """n random bytes from rng (random.Random.randbytes needs Python 3.9)."""
    return rng.getrandbits(8 * n).to_bytes(n, "little") if n else b""


@pytest.fixture(scope="session")
def vectors() -> Dict[str, Any]:
    return VECTORS_DATA
