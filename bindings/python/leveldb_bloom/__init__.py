"""LevelDB's built-in Bloom filter policy (``leveldb.BuiltinBloomFilter2``), bit-identical
to LevelDB 1.23, through ctypes over the leveldb-bloom C library (``libleveldb_bloom.so``).

>>> from leveldb_bloom import BloomPolicy
>>> with BloomPolicy(10) as policy:
...     f = policy.create_filter([b"hello", b"world"])
...     policy.may_match(b"hello", f)
True

Opt-in, ``CompactPolicy(bits_per_key)`` and ``FilterPolicy.for_fp_rate(rate, format)``
make policies of the compact format (``Format.COMPACT``): filters as long as LevelDB's Bloom
filters at the same bits per key with far fewer false positives (measured:
docs/benchmarks.md, "The compact format's gain"), which
stock LevelDB answers "may match"; such a policy still answers LevelDB's Bloom filters as LevelDB
does.

Keys, filters and blocks are byte strings: ``bytes``, ``bytearray`` or ``memoryview``
(anything else is a ``TypeError``). The library is the one ``pip install`` built into this
package, unless ``$LEVELDB_BLOOM_LIB`` names another; see ``leveldb_bloom._native``.

Ownership: each ``FilterPolicy`` and ``FilterBlockBuilder`` owns one C object, freed exactly
once by ``close()``, by leaving its ``with`` block, or when it is garbage collected.
Methods of a closed object raise ``ValueError``.

Thread safety (as in the C header): a ``FilterPolicy`` is immutable and may be used by any
number of threads at once; the C calls run without the GIL. Closing a policy while other
threads are inside one of its calls is safe: the C object is freed when the last of those
calls returns. A ``FilterBlockBuilder`` is for one thread at a time; this wrapper
serialises concurrent calls with a lock rather than corrupting it.
"""

from __future__ import annotations

import ctypes
import enum
import math
import numbers
import operator
import os
import threading
from typing import Any, Iterable, List, NamedTuple, Optional, Sequence, Union

from . import _native

__version__ = "0.1.0"

__all__ = [
    "AlreadyFinishedError",
    "BloomPolicy",
    "CompactPolicy",
    "BufferTooSmallError",
    "BytesLike",
    "FilterBlockBuilder",
    "FilterPolicy",
    "Format",
    "InvalidArgumentError",
    "LevelDBBloomError",
    "NotCountedError",
    "NullArgumentError",
    "OffsetBackwardsError",
    "OutOfMemoryError",
    "PanicError",
    "Stats",
    "Status",
    "TooLargeError",
    "filter_block_may_match",
    "filter_block_may_match_batch",
    "global_stats",
    "dropin_path",
    "library_path",
    "reset_global_stats",
    "status_message",
    "version",
]

if _native.EXPECTED_VERSION != __version__:  # pragma: no cover - a packaging mistake
    raise ImportError("leveldb_bloom: _native.EXPECTED_VERSION differs from __version__")

_lib, _lib_path = _native.load()

BytesLike = Union[bytes, bytearray, memoryview]


# --------------------------------------------------------------------------- errors


class Status(enum.IntEnum):
    """The C API's status codes (``leveldb_bloom_status``)."""

    OK = 0
    NULL_ARGUMENT = 1
    INVALID_ARGUMENT = 2
    BUFFER_TOO_SMALL = 3
    OFFSET_BACKWARDS = 4
    ALREADY_FINISHED = 5
    PANIC = 6
    TOO_LARGE = 7
    OUT_OF_MEMORY = 8
    NOT_COUNTED = 9


def status_message(status: int) -> str:
    """The library's description of a status code (``leveldb_bloom_status_message``)."""
    code = operator.index(status)
    if not -(2**31) <= code <= 2**31 - 1:
        return "unknown status"
    return _lib.leveldb_bloom_status_message(code).decode("utf-8", "replace")


class LevelDBBloomError(Exception):
    """An error status from the C library.

    ``status`` is the code (a ``Status`` when known), ``message`` the library's
    description of it (``leveldb_bloom_status_message``), ``operation`` the call that
    failed.
    """

    def __init__(self, status: int, operation: str = "", message: Optional[str] = None):
        try:
            code: int = Status(status)
        except ValueError:
            code = int(status)
        self.status = code
        self.message = status_message(code) if message is None else message
        self.operation = operation
        name = code.name if isinstance(code, Status) else str(code)
        prefix = f"{operation}: " if operation else ""
        super().__init__(f"{prefix}{self.message} (LEVELDB_BLOOM_ERR_{name}, status {int(code)})")


class NullArgumentError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_NULL_ARGUMENT (a bug in this wrapper if it ever surfaces)."""


class InvalidArgumentError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_INVALID_ARGUMENT."""


class BufferTooSmallError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL (a bug in this wrapper if it ever surfaces)."""


class OffsetBackwardsError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS: ``start_block`` went back before a started block."""


class AlreadyFinishedError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_ALREADY_FINISHED: the builder was finished."""


class PanicError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_PANIC: a bug inside the library, caught at its boundary."""


class TooLargeError(LevelDBBloomError, OverflowError):
    """LEVELDB_BLOOM_ERR_TOO_LARGE: a size overflows what memory or the format can hold."""


class OutOfMemoryError(LevelDBBloomError, MemoryError):
    """LEVELDB_BLOOM_ERR_OUT_OF_MEMORY."""


class NotCountedError(LevelDBBloomError):
    """LEVELDB_BLOOM_ERR_NOT_COUNTED: statistics asked of a policy that does not count
    (only ``FilterPolicy.counted()`` makes policies that do)."""


_ERRORS = {
    Status.NULL_ARGUMENT: NullArgumentError,
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.BUFFER_TOO_SMALL: BufferTooSmallError,
    Status.OFFSET_BACKWARDS: OffsetBackwardsError,
    Status.ALREADY_FINISHED: AlreadyFinishedError,
    Status.PANIC: PanicError,
    Status.TOO_LARGE: TooLargeError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.NOT_COUNTED: NotCountedError,
}


def _check(status: int, operation: str) -> None:
    if status != Status.OK:
        raise _ERRORS.get(status, LevelDBBloomError)(status, operation)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- conversions


def _as_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    hint = " (encode the str first)" if isinstance(value, str) else ""
    raise TypeError(
        f"{what} must be bytes, bytearray or memoryview, not {type(value).__name__}{hint}"
    )


def _as_key_list(keys: Any, what: str = "keys") -> List[bytes]:
    if isinstance(keys, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            f"{what} must be an iterable of byte strings, not a single {type(keys).__name__}"
        )
    try:
        it = iter(keys)
    except TypeError:
        raise TypeError(
            f"{what} must be an iterable of byte strings, not {type(keys).__name__}"
        ) from None
    return [_as_bytes(k, f"{what}[{i}]") for i, k in enumerate(it)]


class _KeyArrays:
    """The (keys, key_lens) arrays of a C call; the char* point into the bytes objects,
    which the array keeps alive."""

    __slots__ = ("n", "ptrs", "lens")

    def __init__(self, keys: List[bytes]):
        self.n = len(keys)
        if self.n:
            self.ptrs: Any = (ctypes.c_char_p * self.n)(*keys)
            self.lens: Any = (ctypes.c_size_t * self.n)(*map(len, keys))
        else:
            self.ptrs = self.lens = None


def _as_real(value: Any, what: str) -> float:
    """A real number as a float (TypeError for anything else: str, bytes, None, complex...).
    An int too large for a float becomes an infinity, which range checks then refuse."""
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, not {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int beyond the float range
        big: Any = value
        return math.inf if big > 0 else -math.inf


def _index_in(value: Any, lo: int, hi: int, what: str) -> int:
    v = operator.index(value)
    if v < lo:
        raise ValueError(f"{what} must be at least {lo}, got {v}")
    if v > hi:
        raise OverflowError(f"{what} must be at most {hi}, got {v}")
    return v


# --------------------------------------------------------------------------- statistics


class Stats(NamedTuple):
    """Filter statistics (``leveldb_bloom_stats``)."""

    filters_built: int
    """Filters created (each create call, however many keys)."""
    keys_added: int
    """Keys added to those filters (duplicates count)."""
    queries: int
    """Queries answered (single key, batch entry, or filter block)."""
    no_match: int
    """Queries answered "no match": the table reads a database avoided."""

    @classmethod
    def _from_c(cls, s: _native.c_stats) -> "Stats":
        return cls(s.filters_built, s.keys_added, s.queries, s.no_match)


def global_stats() -> Stats:
    """What every counted policy in the process (``FilterPolicy.counted()``, destroyed
    ones included) has counted since start or the last ``reset_global_stats()``."""
    s = _native.c_stats()
    _check(_lib.leveldb_bloom_global_stats(ctypes.byref(s)), "global_stats")
    return Stats._from_c(s)


def reset_global_stats() -> None:
    """Restarts the process-wide counts from zero (per-policy counts are not affected)."""
    _lib.leveldb_bloom_global_stats_reset()


def version() -> str:
    """The C library's version (``leveldb_bloom_version``), equal to ``__version__``."""
    return _lib.leveldb_bloom_version().decode("ascii", "replace")


def library_path() -> str:
    """The path or name the C library was loaded from."""
    return _lib_path


def dropin_path() -> Optional[str]:
    """The drop-in pip installed in this package (``libleveldb_bloom_dropin.so``), for a
    program's ``LD_PRELOAD`` (docs/drop-in.md), or None if the package has none (a package
    not built by pip). The ``leveldb-bloom run`` command preloads it for you."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libleveldb_bloom_dropin.so")
    return path if os.path.isfile(path) else None


# --------------------------------------------------------------------------- policy


class Format(enum.IntEnum):
    """The filter formats a policy builds (``leveldb_bloom_format``)."""

    BLOOM = 0
    """LevelDB's own Bloom filters, byte-identical to LevelDB's."""
    COMPACT = 1
    """The opt-in compact format: far fewer false positives than the Bloom filter's in the
    same memory. Stock LevelDB answers these filters "may match"."""


def _as_format(value: Any) -> Format:
    """A ``Format`` from a ``Format`` or its int value (ValueError if unknown)."""
    if isinstance(value, Format):
        return value
    code = operator.index(value)  # TypeError for a str, float, None...
    try:
        return Format(code)
    except ValueError:
        known = ", ".join(f"{f.name} ({int(f)})" for f in Format)
        raise ValueError(f"unknown format {code}; the formats are {known}") from None


class _Owned:
    """Owns one C object: freed by ``close()``, at the end of a ``with`` block, or when
    collected."""

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class FilterPolicy(_Owned):
    """LevelDB's built-in filter policy (``leveldb.BuiltinBloomFilter2``) for one
    bits-per-key setting, of either format: made by ``BloomPolicy(bits_per_key)`` (LevelDB's
    Bloom filters), ``CompactPolicy(bits_per_key)`` (the opt-in compact format) or
    ``FilterPolicy.for_fp_rate(rate, format)``. Every policy, of either format, answers
    every filter: LevelDB's Bloom filters exactly as LevelDB does, compact filters by their
    fingerprints (a Bloom policy, like stock LevelDB, answers compact filters "may match").
    """

    def __init__(self) -> None:
        self._ptr: Optional[int] = None  # first, so that __del__ works
        self._closed = True
        raise TypeError(
            "make a policy with BloomPolicy(bits_per_key), CompactPolicy(bits_per_key) or "
            "FilterPolicy.for_fp_rate(rate, format)"
        )

    @classmethod
    def for_fp_rate(cls, rate: float, format: Format = Format.BLOOM) -> "FilterPolicy":
        """The policy of ``format`` with the fewest bits per key expected to give at most
        ``rate`` false positives (``leveldb_bloom_policy_create_for_fp_rate``).

        ``Format.BLOOM``: the smallest whole bits per key (1 to 100) whose standard model
        ``(1 - e^(-k/b))^k`` reaches ``rate`` (LevelDB's filters measure somewhat worse).
        ``Format.COMPACT``: the fewest bits per key, in 64ths, at which every filter of 50
        to 10,000,000 keys gets at most ``rate`` (``docs/compact-format.md``, "Building";
        1% takes 7.39 bits per key, and filters of 1,000 keys then get about 0.73%; smaller
        filters may get more). The choice is in ``bits_per_key``.

        A ``rate`` outside (0, 1), NaN, or beyond the format's reach (one that would need
        more than 100 bits per key for Bloom, below about 2.5e-18; more than 32 for compact,
        below about 8e-10) is a ``ValueError``, and so is an unknown
        ``format``; a non-number ``rate`` or a ``format`` that is not an int is a
        ``TypeError``.
        """
        r = _as_real(rate, "rate")
        fmt = _as_format(format)
        if not 0.0 < r < 1.0:  # NaN fails too
            raise ValueError(f"rate must be in (0, 1), got {rate!r}")
        ptr = _lib.leveldb_bloom_policy_create_for_fp_rate(r, int(fmt))
        if not ptr:
            # The arguments were checked; NULL is a rate out of the format's reach or,
            # if even an easy rate fails, memory running out.
            probe = _lib.leveldb_bloom_policy_create_for_fp_rate(0.5, int(fmt))
            if probe:
                _lib.leveldb_bloom_policy_destroy(probe)
                raise ValueError(
                    f"rate {rate!r} is beyond the reach of the {fmt.name} format"
                )
        policy_class = CompactPolicy if fmt == Format.COMPACT else BloomPolicy
        policy = policy_class.__new__(policy_class)
        policy._ptr = None
        policy._closed = True
        policy._adopt(ptr, "leveldb_bloom_policy_create_for_fp_rate")
        return policy

    def _adopt(self, ptr: Optional[int], operation: str) -> None:
        """Takes ownership of a new C policy (NULL: OutOfMemoryError) and caches what never
        changes, so that it stays readable after close()."""
        if not ptr:
            raise OutOfMemoryError(Status.OUT_OF_MEMORY, operation)
        self._ptr = ptr
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False
        try:
            self._format = Format(_lib.leveldb_bloom_policy_format(ptr))
            bpk = _lib.leveldb_bloom_policy_bits_per_key(ptr)
            # Bloom policies have whole bits per key and keep reporting them as an int.
            self._bits_per_key: float = int(bpk) if self._format == Format.BLOOM else float(bpk)
            self._name = _lib.leveldb_bloom_policy_name(ptr).decode("ascii", "replace")
        except BaseException:  # pragma: no cover - a library this package does not know
            self.close()
            raise

    # Calls in flight hold the C object; close() frees it when the last one returns.
    def _acquire(self) -> int:
        with self._lock:
            if self._closed:
                raise ValueError(f"operation on a closed {type(self).__name__}")
            self._users += 1
            return self._ptr  # type: ignore[return-value]

    def _release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users or not self._closed or self._ptr is None:
                return
            ptr, self._ptr = self._ptr, None
        _lib.leveldb_bloom_policy_destroy(ptr)

    def close(self) -> None:
        """Frees the C policy (once; later calls do nothing). Filter block builders made
        from it stay usable."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ did not get that far
            return
        with lock:
            if self._closed:
                return
            self._closed = True
            if self._users:
                return  # the last call in flight frees it
            ptr, self._ptr = self._ptr, None
        if ptr:
            _lib.leveldb_bloom_policy_destroy(ptr)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "FilterPolicy":
        if self._closed:
            raise ValueError(f"operation on a closed {type(self).__name__}")
        return self

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        bpk = getattr(self, "_bits_per_key", "?")
        return f"{type(self).__name__}(bits_per_key={bpk!r}{state})"

    @property
    def name(self) -> str:
        """``"leveldb.BuiltinBloomFilter2"``, the name LevelDB records in tables."""
        return self._name

    @property
    def format(self) -> Format:
        """The format of the filters this policy builds."""
        return self._format

    @property
    def bits_per_key(self) -> float:
        """The bits per key the policy was created with (or chose, for ``for_fp_rate``): an
        ``int`` for a Bloom policy, a ``float`` for a compact one."""
        return self._bits_per_key

    def filter_len(self, num_keys: int) -> int:
        """The byte length of the filter for ``num_keys`` keys (duplicates count), the same
        for both formats at the same bits per key. ``TooLargeError`` if it does not fit
        ``size_t``."""
        n = _index_in(num_keys, 0, _native.SIZE_MAX, "num_keys")
        ptr = self._acquire()
        try:
            size = _lib.leveldb_bloom_filter_len(ptr, n)
        finally:
            self._release()
        if size == 0:
            raise TooLargeError(Status.TOO_LARGE, "filter_len")
        return int(size)

    def create_filter(self, keys: Iterable[BytesLike]) -> bytes:
        """The filter for ``keys``: byte-identical to LevelDB's ``CreateFilter`` for a Bloom
        policy, a compact filter (last byte 31) for a compact one."""
        arrays = _KeyArrays(_as_key_list(keys))
        out_len = ctypes.c_size_t(0)
        ptr = self._acquire()
        try:
            need = _lib.leveldb_bloom_filter_len(ptr, arrays.n)
            if need == 0:
                raise TooLargeError(Status.TOO_LARGE, "create_filter")
            out = ctypes.create_string_buffer(need)
            status = _lib.leveldb_bloom_create_filter(
                ptr, arrays.ptrs, arrays.lens, arrays.n, out, need, ctypes.byref(out_len)
            )
        finally:
            self._release()
        _check(status, "create_filter")
        return out.raw[: out_len.value]

    def may_match(self, key: BytesLike, filter: BytesLike) -> bool:
        """Whether ``key`` may be in ``filter`` (built by this library or LevelDB with any
        bits per key), answered exactly as LevelDB answers, malformed filters included.
        ``False`` means certainly absent. A compact policy reads a filter of 2 or more bytes
        ending in the byte 31 as a compact filter (which LevelDB, and a Bloom policy, answer
        "may match")."""
        k = _as_bytes(key, "key")
        f = _as_bytes(filter, "filter")
        ptr = self._acquire()
        try:
            return bool(_lib.leveldb_bloom_key_may_match(ptr, k, len(k), f, len(f)))
        finally:
            self._release()

    def may_match_batch(self, keys: Iterable[BytesLike], filter: BytesLike) -> List[bool]:
        """``[self.may_match(k, filter) for k in keys]``, in one C call."""
        arrays = _KeyArrays(_as_key_list(keys))
        f = _as_bytes(filter, "filter")
        results = (ctypes.c_uint8 * max(arrays.n, 1))()
        ptr = self._acquire()
        try:
            status = _lib.leveldb_bloom_key_may_match_batch(
                ptr, arrays.ptrs, arrays.lens, arrays.n, f, len(f), results
            )
        finally:
            self._release()
        _check(status, "may_match_batch")
        return [r != 0 for r in bytes(results)[: arrays.n]]

    def counted(self) -> "FilterPolicy":
        """A new policy of the same class that builds and answers exactly as this one and
        also counts its work, for ``stats()`` and ``global_stats()``
        (``leveldb_bloom_policy_counted``). Other policies count nothing, and their queries do
        no work for statistics. This policy stays open and unchanged."""
        ptr = self._acquire()
        try:
            new = _lib.leveldb_bloom_policy_counted(ptr)
        finally:
            self._release()
        policy = type(self).__new__(type(self))
        policy._ptr = None
        policy._closed = True
        policy._adopt(new, "leveldb_bloom_policy_counted")
        return policy

    def stats(self) -> Stats:
        """What this policy (and builders made from it) counted since creation or the last
        ``reset_stats()``. ``NotCountedError`` unless the policy was made by ``counted()``."""
        s = _native.c_stats()
        ptr = self._acquire()
        try:
            status = _lib.leveldb_bloom_policy_stats(ptr, ctypes.byref(s))
        finally:
            self._release()
        _check(status, "stats")
        return Stats._from_c(s)

    def reset_stats(self) -> None:
        """Restarts this policy's counts from zero (the global counts are not affected).
        ``NotCountedError`` unless the policy was made by ``counted()``."""
        ptr = self._acquire()
        try:
            status = _lib.leveldb_bloom_policy_stats_reset(ptr)
        finally:
            self._release()
        _check(status, "reset_stats")


# --------------------------------------------------------------------------- filter blocks


class BloomPolicy(FilterPolicy):
    """LevelDB's Bloom filter policy: ``BloomPolicy(bits_per_key)`` builds the filters of
    LevelDB's ``NewBloomFilterPolicy(bits_per_key)``. ``bits_per_key`` 0 is valid; a negative
    one is a ``ValueError``, one above ``INT_MAX`` an ``OverflowError``.
    """

    def __init__(self, bits_per_key: int) -> None:
        self._ptr: Optional[int] = None  # first, so that __del__ works if __init__ raises
        self._closed = True
        bpk = _index_in(bits_per_key, 0, _native.INT_MAX, "bits_per_key")
        self._adopt(_lib.leveldb_bloom_policy_create(bpk), "leveldb_bloom_policy_create")


class CompactPolicy(FilterPolicy):
    """The opt-in compact filter policy (``Format.COMPACT``).

    ``CompactPolicy(bits_per_key)``: filters as long as LevelDB's Bloom filters at the same
    bits per key, with far fewer false positives. Their last byte, 31, makes
    stock LevelDB answer "may match", so tables written with them stay readable everywhere;
    the policy keeps LevelDB's name and answers LevelDB's Bloom filters as LevelDB does.

    ``bits_per_key`` may be fractional, from 0 to 32 (below about 1.2 no filter fits and the
    filters answer "may match" for every key); anything else, NaN and the infinities
    included, is a ``ValueError``, and a value that is not a real number a ``TypeError``.
    """

    def __init__(self, bits_per_key: float) -> None:
        self._ptr: Optional[int] = None  # first, so that __del__ works if __init__ raises
        self._closed = True
        bpk = _as_real(bits_per_key, "bits_per_key")
        if not 0.0 <= bpk <= _native.COMPACT_MAX_BITS_PER_KEY:  # NaN fails too
            raise ValueError(
                "bits_per_key of a compact policy must be a number from 0 to "
                f"{_native.COMPACT_MAX_BITS_PER_KEY:g}, got {bits_per_key!r}"
            )
        self._adopt(
            _lib.leveldb_bloom_policy_create_compact(bpk), "leveldb_bloom_policy_create_compact"
        )


class FilterBlockBuilder(_Owned):
    """Builds the filter block of one LevelDB table, as LevelDB's ``FilterBlockBuilder``.

    Call ``start_block(offset)`` for each data block (0 first, then the offset past each
    block and its trailer), ``add_key(key)`` for its keys, then ``finish()`` for the block's
    bytes. After ``finish()``, ``start_block`` and ``add_key`` raise
    ``AlreadyFinishedError``; ``finish()`` again returns the same bytes. A ``start_block``
    offset in a 2 KiB window before one already started raises ``OffsetBackwardsError``.
    """

    def __init__(self, policy: FilterPolicy) -> None:
        self._ptr: Optional[int] = None
        if not isinstance(policy, FilterPolicy):
            raise TypeError(f"policy must be a FilterPolicy, not {type(policy).__name__}")
        p = policy._acquire()
        try:
            ptr = _lib.leveldb_bloom_filter_block_builder_create(p)
        finally:
            policy._release()
        if not ptr:
            raise OutOfMemoryError(Status.OUT_OF_MEMORY, "filter_block_builder_create")
        self._ptr = ptr
        self._lock = threading.Lock()  # a C builder is for one thread at a time

    def _live(self) -> int:
        if self._ptr is None:
            raise ValueError("operation on a closed FilterBlockBuilder")
        return self._ptr

    def start_block(self, block_offset: int) -> None:
        """Announces a data block starting at ``block_offset`` (0 <= offset < 2**64)."""
        off = _index_in(block_offset, 0, _native.UINT64_MAX, "block_offset")
        with self._lock:
            status = _lib.leveldb_bloom_filter_block_builder_start_block(self._live(), off)
        _check(status, "start_block")

    def add_key(self, key: BytesLike) -> None:
        """Adds a key (copied) to the filter of the current data block."""
        k = _as_bytes(key, "key")
        with self._lock:
            status = _lib.leveldb_bloom_filter_block_builder_add_key(self._live(), k, len(k))
        _check(status, "add_key")

    def add_keys(self, keys: Iterable[BytesLike]) -> None:
        """``add_key`` for each key."""
        for k in _as_key_list(keys):
            self.add_key(k)

    def finish(self) -> bytes:
        """The filter block's bytes (a copy; the builder may be closed afterwards)."""
        block = ctypes.c_void_p()
        block_len = ctypes.c_size_t(0)
        with self._lock:
            status = _lib.leveldb_bloom_filter_block_builder_finish(
                self._live(), ctypes.byref(block), ctypes.byref(block_len)
            )
            if status == Status.OK:
                # The bytes belong to the builder: copy them while it is alive and locked.
                n = block_len.value
                return ctypes.string_at(block.value, n) if n and block.value else b""
        _check(status, "finish")
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Frees the C builder (once; later calls do nothing)."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            ptr, self._ptr = self._ptr, None
        if ptr:
            _lib.leveldb_bloom_filter_block_builder_destroy(ptr)

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def __enter__(self) -> "FilterBlockBuilder":
        self._live()
        return self



def filter_block_may_match(
    policy: FilterPolicy, block: BytesLike, block_offset: int, key: BytesLike
) -> bool:
    """Whether ``key`` may be in the data block at ``block_offset`` of the table whose filter
    block is ``block``, answered exactly as LevelDB's ``FilterBlockReader`` (malformed blocks
    answer "may match")."""
    if not isinstance(policy, FilterPolicy):
        raise TypeError(f"policy must be a FilterPolicy, not {type(policy).__name__}")
    b = _as_bytes(block, "block")
    off = _index_in(block_offset, 0, _native.UINT64_MAX, "block_offset")
    k = _as_bytes(key, "key")
    p = policy._acquire()
    try:
        return bool(_lib.leveldb_bloom_filter_block_may_match(p, b, len(b), off, k, len(k)))
    finally:
        policy._release()


def filter_block_may_match_batch(
    policy: FilterPolicy,
    block: BytesLike,
    block_offsets: Union[int, Sequence[int]],
    keys: Iterable[BytesLike],
) -> List[bool]:
    """``filter_block_may_match`` for many queries in one C call: query ``i`` asks about
    ``keys[i]`` in the data block at ``block_offsets[i]`` (or at ``block_offsets`` for
    every key, if it is an int)."""
    if not isinstance(policy, FilterPolicy):
        raise TypeError(f"policy must be a FilterPolicy, not {type(policy).__name__}")
    b = _as_bytes(block, "block")
    arrays = _KeyArrays(_as_key_list(keys))
    if isinstance(block_offsets, int):
        offs = [_index_in(block_offsets, 0, _native.UINT64_MAX, "block_offset")] * arrays.n
    else:
        offs = [_index_in(o, 0, _native.UINT64_MAX, "block_offset") for o in block_offsets]
        if len(offs) != arrays.n:
            raise ValueError(f"{len(offs)} block offsets for {arrays.n} keys")
    c_offs = (ctypes.c_uint64 * max(arrays.n, 1))(*offs)
    results = (ctypes.c_uint8 * max(arrays.n, 1))()
    p = policy._acquire()
    try:
        status = _lib.leveldb_bloom_filter_block_may_match_batch(
            p, b, len(b), c_offs, arrays.ptrs, arrays.lens, arrays.n, results
        )
    finally:
        policy._release()
    _check(status, "filter_block_may_match_batch")
    return [r != 0 for r in bytes(results)[: arrays.n]]
