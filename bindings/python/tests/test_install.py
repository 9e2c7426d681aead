"""Which library the package loads, and what that library exports (test_api.py has the
LEVELDB_BLOOM_LIB override and its errors).

scripts/test-python runs the suite on the package pip installed into a fresh virtual
environment (no LEVELDB_BLOOM_LIB): the library must be the one built into the package.
CTest's python_suite sets LEVELDB_BLOOM_LIB to the build's library: it must be that one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

import leveldb_bloom
from conftest import REPO

HEADER = REPO / "include" / "leveldb_bloom.h"


def test_loads_the_library_it_is_told_to_or_its_own():
    loaded = os.path.realpath(leveldb_bloom.library_path())
    told = os.environ.get("LEVELDB_BLOOM_LIB")
    if told:
        assert loaded == os.path.realpath(told)
    else:
        package_dir = os.path.dirname(os.path.realpath(leveldb_bloom.__file__))
        assert os.path.dirname(loaded) == package_dir
        assert os.path.basename(loaded).startswith("libleveldb_bloom")


def test_carries_the_drop_in_and_the_command_when_pip_built_it():
    if os.environ.get("LEVELDB_BLOOM_LIB"):
        # The source tree's package, as CTest runs it: pip put nothing in it.
        assert leveldb_bloom.dropin_path() is None
        return
    package_dir = os.path.dirname(os.path.realpath(leveldb_bloom.__file__))
    dropin = leveldb_bloom.dropin_path()
    assert dropin is not None and os.path.dirname(os.path.realpath(dropin)) == package_dir
    command = os.path.join(package_dir, "leveldb-bloom")
    shown = subprocess.run([command, "--version"], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["leveldb-bloom", leveldb_bloom.__version__]


def _defined_dynamic_symbols(path: str) -> set:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) not installed")
def test_library_exports_exactly_the_header_functions():
    declared = set(re.findall(r"\b(leveldb_bloom_\w+)\s*\(", HEADER.read_text()))
    assert declared, HEADER
    assert _defined_dynamic_symbols(leveldb_bloom.library_path()) == declared
