"""Loading libleveldb_bloom.so and declaring the C API's prototypes (include/leveldb_bloom.h).

The library is looked up, in order:

1. ``$LEVELDB_BLOOM_LIB``: the path of the shared library (or of a directory holding
   ``libleveldb_bloom.so``). When it is set, nothing else is tried.
2. The library inside this package: ``libleveldb_bloom*.so`` in its directory, where
   ``pip install`` puts the one it builds (setup.py).
3. The system library path: ``ctypes.util.find_library("leveldb_bloom")``, then
   ``CDLL("libleveldb_bloom.so")`` (which honours ``LD_LIBRARY_PATH``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from typing import List, Tuple

LIB_ENV = "LEVELDB_BLOOM_LIB"
LIB_FILE = "libleveldb_bloom.so"

# The version of the C library this package is written against (LEVELDB_BLOOM_VERSION).
EXPECTED_VERSION = "0.1.0"

INT_MAX = 2**31 - 1
SIZE_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1
UINT64_MAX = 2**64 - 1

# The largest bits per key of a compact policy (leveldb_bloom_policy_create_compact).
COMPACT_MAX_BITS_PER_KEY = 32.0


class c_stats(ctypes.Structure):
    """leveldb_bloom_stats."""

    _fields_ = [
        ("filters_built", ctypes.c_uint64),
        ("keys_added", ctypes.c_uint64),
        ("queries", ctypes.c_uint64),
        ("no_match", ctypes.c_uint64),
    ]


_p = ctypes.c_void_p  # opaque leveldb_bloom_policy* / leveldb_bloom_filter_block_builder*
_size_p = ctypes.POINTER(ctypes.c_size_t)
_keys_p = ctypes.POINTER(ctypes.c_char_p)  # const char *const *
_u8_p = ctypes.POINTER(ctypes.c_uint8)

# name: (restype, argtypes). Byte inputs are declared c_char_p so that a bytes object is
# passed without a copy; outputs are declared c_void_p and given ctypes buffers.
_PROTOTYPES = {
    "leveldb_bloom_policy_create": (_p, [ctypes.c_int]),
    "leveldb_bloom_policy_create_compact": (_p, [ctypes.c_double]),
    "leveldb_bloom_policy_create_for_fp_rate": (_p, [ctypes.c_double, ctypes.c_int]),
    "leveldb_bloom_policy_format": (ctypes.c_int, [_p]),
    "leveldb_bloom_policy_bits_per_key": (ctypes.c_double, [_p]),
    "leveldb_bloom_policy_counted": (_p, [_p]),
    "leveldb_bloom_policy_destroy": (None, [_p]),
    "leveldb_bloom_policy_name": (ctypes.c_char_p, [_p]),
    "leveldb_bloom_filter_len": (ctypes.c_size_t, [_p, ctypes.c_size_t]),
    "leveldb_bloom_create_filter": (
        ctypes.c_int,
        [_p, _keys_p, _size_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, _size_p],
    ),
    "leveldb_bloom_key_may_match": (
        ctypes.c_bool,
        [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t],
    ),
    "leveldb_bloom_key_may_match_batch": (
        ctypes.c_int,
        [_p, _keys_p, _size_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, _u8_p],
    ),
    "leveldb_bloom_policy_stats": (ctypes.c_int, [_p, ctypes.POINTER(c_stats)]),
    "leveldb_bloom_policy_stats_reset": (ctypes.c_int, [_p]),
    "leveldb_bloom_global_stats": (ctypes.c_int, [ctypes.POINTER(c_stats)]),
    "leveldb_bloom_global_stats_reset": (None, []),
    "leveldb_bloom_status_message": (ctypes.c_char_p, [ctypes.c_int]),
    "leveldb_bloom_version": (ctypes.c_char_p, []),
    "leveldb_bloom_filter_block_builder_create": (_p, [_p]),
    "leveldb_bloom_filter_block_builder_start_block": (ctypes.c_int, [_p, ctypes.c_uint64]),
    "leveldb_bloom_filter_block_builder_add_key": (
        ctypes.c_int,
        [_p, ctypes.c_char_p, ctypes.c_size_t],
    ),
    "leveldb_bloom_filter_block_builder_finish": (
        ctypes.c_int,
        [_p, ctypes.POINTER(ctypes.c_void_p), _size_p],
    ),
    "leveldb_bloom_filter_block_builder_destroy": (None, [_p]),
    "leveldb_bloom_filter_block_may_match": (
        ctypes.c_bool,
        [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t],
    ),
    "leveldb_bloom_filter_block_may_match_batch": (
        ctypes.c_int,
        [
            _p,
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_uint64),
            _keys_p,
            _size_p,
            ctypes.c_size_t,
            _u8_p,
        ],
    ),
}


def _candidates() -> Tuple[List[str], bool]:
    """The library paths or names to try, and whether they come from LEVELDB_BLOOM_LIB."""
    env = os.environ.get(LIB_ENV)
    if env:
        path = os.path.join(env, LIB_FILE) if os.path.isdir(env) else env
        return [path], True
    names = []
    here = os.path.dirname(os.path.abspath(__file__))
    names.extend(sorted(glob.glob(os.path.join(glob.escape(here), "libleveldb_bloom*.so"))))
    found = ctypes.util.find_library("leveldb_bloom")
    if found:
        names.append(found)
    names.append(LIB_FILE)
    return names, False


def load() -> Tuple[ctypes.CDLL, str]:
    """Loads the library, declares its prototypes and checks its version.

    Raises ImportError, saying what was tried, if no usable library is found.
    """
    names, from_env = _candidates()
    errors = []
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(f"{name}: {e}")
            continue
        try:
            declare(lib)
        except AttributeError as e:
            raise ImportError(
                f"leveldb_bloom: {name} is not a usable libleveldb_bloom ({e})"
            ) from None
        check_version(lib.leveldb_bloom_version().decode("ascii", "replace"), name)
        return lib, name
    where = f"${LIB_ENV}={os.environ.get(LIB_ENV)}" if from_env else "the package directory, "
    if not from_env:
        where += "ctypes.util.find_library('leveldb_bloom') and the system library path"
    raise ImportError(
        "leveldb_bloom: cannot load the shared library libleveldb_bloom.so "
        f"(looked in {where}). `pip install` of the package builds it in; or build it with "
        f"`cargo build --release` and set {LIB_ENV} to target/release/{LIB_FILE}, or "
        "install it in the system library path. Errors: " + "; ".join(errors)
    )


def declare(lib: ctypes.CDLL) -> None:
    """Sets restype/argtypes of every function; AttributeError if one is missing."""
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def check_version(lib_version: str, where: str) -> None:
    """ImportError unless the library's version is the one this package is written for."""
    if lib_version != EXPECTED_VERSION:
        raise ImportError(
            f"leveldb_bloom: the Python package is version {EXPECTED_VERSION} but the "
            f"shared library {where} reports version {lib_version!r} "
            "(leveldb_bloom_version()); use the library built from the same release, "
            f"or point {LIB_ENV} at it"
        )
