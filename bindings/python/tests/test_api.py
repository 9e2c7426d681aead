"""The Pythonic surface: errors, ownership, conversions, version."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import threading
import weakref

import pytest

import leveldb_bloom as lb
from leveldb_bloom import _native


def test_version_matches_package():
    assert lb.version() == lb.__version__ == "0.1.0"


def test_version_mismatch_is_an_import_error():
    _native.check_version("0.1.0", "here")
    with pytest.raises(ImportError, match=r"version 0\.1\.0 .*reports version '9\.9\.9'"):
        _native.check_version("9.9.9", "/some/libleveldb_bloom.so")


def _import_in_subprocess(lib):
    env = dict(os.environ, LEVELDB_BLOOM_LIB=lib)
    code = "import leveldb_bloom, sys; sys.stdout.write(leveldb_bloom.library_path())"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )


def test_missing_library_is_an_import_error():
    r = _import_in_subprocess("/nonexistent/libleveldb_bloom.so")
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "LEVELDB_BLOOM_LIB" in r.stderr


def test_library_file_or_directory_in_env(tmp_path):
    lib = lb.library_path()
    if os.sep not in lib:
        pytest.skip("library loaded from the system path")
    copy = tmp_path / "libleveldb_bloom.so"
    shutil.copy(lib, copy)
    for told in (copy, tmp_path):
        r = _import_in_subprocess(str(told))
        assert r.returncode == 0, r.stderr
        assert r.stdout == str(copy)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("bpk", [-1, -(2**31), -(2**70)])
def test_negative_bits_per_key_is_a_value_error(bpk):
    with pytest.raises(ValueError):
        lb.BloomPolicy(bpk)


def test_bits_per_key_range_and_type():
    with pytest.raises(OverflowError):
        lb.BloomPolicy(2**31)
    with pytest.raises(TypeError):
        lb.BloomPolicy(10.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        lb.BloomPolicy("10")  # type: ignore[arg-type]
    with lb.BloomPolicy(0) as p:
        assert p.bits_per_key == 0
    with lb.BloomPolicy(2**31 - 1) as p:  # valid; filters just get big
        assert p.filter_len(0) == 8 + 1
        with pytest.raises(lb.TooLargeError) as e:
            p.filter_len(2**62)
        assert isinstance(e.value, OverflowError)
        assert e.value.status == lb.Status.TOO_LARGE


@pytest.mark.parametrize("bad", ["hello", 1, None, 3.5, [b"x"], object()])
def test_non_bytes_keys_are_type_errors(bad):
    with lb.BloomPolicy(10) as p:
        f = p.create_filter([b"x"])
        with pytest.raises(TypeError):
            p.create_filter([bad])
        with pytest.raises(TypeError):
            p.create_filter([b"ok", bad])
        with pytest.raises(TypeError):
            p.may_match(bad, f)
        with pytest.raises(TypeError):
            p.may_match_batch([b"ok", bad], f)
        with pytest.raises(TypeError):
            p.may_match(b"x", bad)
        with lb.FilterBlockBuilder(p) as b:
            with pytest.raises(TypeError):
                b.add_key(bad)


@pytest.mark.parametrize("single", [b"abc", bytearray(b"abc"), memoryview(b"abc"), "abc"])
def test_a_single_string_is_not_a_key_list(single):
    with lb.BloomPolicy(10) as p:
        with pytest.raises(TypeError, match="iterable of byte strings"):
            p.create_filter(single)
        with pytest.raises(TypeError):
            p.may_match_batch(single, b"\x00\x00")


def test_not_iterable_keys():
    with lb.BloomPolicy(10) as p:
        with pytest.raises(TypeError):
            p.create_filter(42)  # type: ignore[arg-type]


def test_bytes_like_keys_give_the_same_answers():
    with lb.BloomPolicy(10) as p:
        f = p.create_filter([b"k1", b"k2"])
        for key in (b"k1", bytearray(b"k1"), memoryview(b"k1"), memoryview(b"xk1x")[1:3]):
            assert p.may_match(key, f)
        assert p.may_match(b"k1", bytearray(f)) and p.may_match(b"k1", memoryview(f))
        # A non-contiguous memoryview is taken in logical order.
        assert p.may_match(memoryview(b"kx1")[::2], f)


def test_error_carries_status_and_library_message():
    e = lb.OffsetBackwardsError(lb.Status.OFFSET_BACKWARDS, "start_block")
    assert e.status == lb.Status.OFFSET_BACKWARDS == 4
    assert e.message == lb.status_message(4)
    assert e.message in str(e) and "start_block" in str(e)
    assert isinstance(e, lb.LevelDBBloomError)
    assert lb.status_message(0) != lb.status_message(4)
    assert lb.status_message(12345) == "unknown status"
    unknown = lb.LevelDBBloomError(99)
    assert unknown.status == 99 and unknown.message == "unknown status"
    assert issubclass(lb.OutOfMemoryError, MemoryError)
    for status in lb.Status:
        if status != lb.Status.OK:
            assert lb.status_message(status)


# ------------------------------------------------------------------ ownership


def test_close_is_idempotent_and_closed_objects_refuse_work():
    p = lb.BloomPolicy(10)
    f = p.create_filter([b"a"])
    p.close()
    p.close()
    assert p.closed
    assert p.name == "leveldb.BuiltinBloomFilter2" and p.bits_per_key == 10
    for call in (
        lambda: p.create_filter([b"a"]),
        lambda: p.may_match(b"a", f),
        lambda: p.may_match_batch([b"a"], f),
        lambda: p.filter_len(1),
        lambda: p.stats(),
        lambda: p.reset_stats(),
        lambda: p.counted(),
        lambda: lb.FilterBlockBuilder(p),
        lambda: lb.filter_block_may_match(p, b"", 0, b"a"),
    ):
        with pytest.raises(ValueError, match="closed"):
            call()
    with pytest.raises(ValueError):
        with p:
            pass
    assert "closed" in repr(p)


def test_context_managers_close():
    with lb.BloomPolicy(10) as p:
        with lb.FilterBlockBuilder(p) as b:
            b.start_block(0)
        assert b.closed
        with pytest.raises(ValueError, match="closed"):
            b.add_key(b"x")
        b.close()  # again: no-op
    assert p.closed


def test_builder_outlives_its_policy():
    p = lb.BloomPolicy(10)
    b = lb.FilterBlockBuilder(p)
    p.close()
    b.start_block(0)
    b.add_key(b"key")
    block = b.finish()
    b.close()
    with lb.BloomPolicy(10) as q:
        assert lb.filter_block_may_match(q, block, 0, b"key")


def test_garbage_collection_frees():
    p = lb.BloomPolicy(10)
    b = lb.FilterBlockBuilder(p)
    refs = [weakref.ref(p), weakref.ref(b)]
    del p, b
    gc.collect()
    assert all(r() is None for r in refs)


def test_failed_init_does_not_break_del():
    with pytest.raises(ValueError):
        lb.BloomPolicy(-5)
    with pytest.raises(TypeError):
        lb.FilterBlockBuilder("not a policy")  # type: ignore[arg-type]
    gc.collect()


def test_close_while_other_threads_query():
    """Closing a policy in use by other threads frees it only after their calls return."""
    p = lb.BloomPolicy(10)
    keys = [b"key%d" % i for i in range(200)]
    f = p.create_filter(keys)
    errors = []
    start = threading.Barrier(5)

    def worker():
        start.wait()
        try:
            while True:
                assert all(p.may_match_batch(keys, f))
                assert p.may_match(keys[7], f)
        except ValueError:
            return  # closed: the expected way out
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    start.wait()
    p.close()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert p.closed and p._ptr is None


def test_module_docstring_example():
    import doctest

    assert doctest.testmod(lb).failed == 0
