"""Reading a `torch.cuda.memory._dump_snapshot` pickle without torch.

The snapshot is plain builtins (dicts, lists, tuples, str, int, float): on the fixture recorded with
torch 2.11 the pickle contains no GLOBAL opcode at all. A restricted unpickler still guards the load,
because a run directory may come from somebody else's machine and `pickle.load` on arbitrary data runs
arbitrary code: builtins containers are allowed, a reference to a `torch.*` class is mapped to a
harmless stand-in (so a snapshot from a torch version that pickles a small helper object still opens
on a laptop without torch), anything else is refused with a `SnapshotError`.

Compression (`.xz`, `.gz`, `.bz2`) is detected from the file's magic bytes, not its name, so a
renamed file still opens.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import pickle
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sysprof.profiler_core.base.errors import SnapshotError

_MAGIC_DECOMPRESSORS = (  # each a fresh incremental decompressor, read in pieces up to a bound
    (b"\xfd7zXZ\x00", lzma.LZMADecompressor),
    (b"\x1f\x8b", lambda: zlib.decompressobj(16 + zlib.MAX_WBITS)),  # gzip's header and trailer
    (b"BZh", bz2.BZ2Decompressor),
)

# Builtins a snapshot may legitimately reference (protocol 2+ pickles of sets/tuples do this).
_SAFE_BUILTINS = {"set", "frozenset", "tuple", "list", "dict", "bytearray", "complex", "slice"}
_SAFE_GLOBALS = {("collections", "OrderedDict"), ("collections", "defaultdict")}




class ForeignObject:
    """Stand-in for a torch object found in a snapshot; keeps what it was built from, runs nothing."""

    qualified_name = "?"

    def __init__(self, *args: Any, **kwargs: Any):
        self.args = args
        self.kwargs = kwargs

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"<{self.qualified_name} (torch object, not loaded)>"


class _SnapshotUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _SAFE_BUILTINS:
            return getattr(__import__("builtins"), name)
        if (module, name) in _SAFE_GLOBALS:
            return getattr(__import__(module), name)
        if module == "torch" or module.startswith("torch."):
            return type(name, (ForeignObject,), {"qualified_name": f"{module}.{name}"})
        raise SnapshotError(f"refused to load {module}.{name}: a memory snapshot holds only plain data")


MAX_EXPANSION = 100  # a compressed snapshot grows about 20-35×; far more is a decompression bomb, not a snapshot
MIN_LIMIT = 64 * 2**20  # below this, any expansion is let be
OBJECTS_PER_PICKLE_BYTE = 40  # a snapshot's Python objects take a few times its pickle; far more is a memo bomb
HEADROOM = 2**30


def _read_bytes(path: str | os.PathLike) -> bytes:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    for magic, decompressor in _MAGIC_DECOMPRESSORS:
        if raw.startswith(magic):
            try:
                return _bounded_decompress(raw, decompressor(), max(MAX_EXPANSION * len(raw), MIN_LIMIT), path)
            except (lzma.LZMAError, OSError, EOFError, ValueError) as exc:
                raise SnapshotError(f"{path}: corrupt compressed data ({exc})") from exc
    return raw


def _bounded_decompress(raw: bytes, decompressor: Any, limit: int, path: str | os.PathLike) -> bytes:
    """The data, read in pieces and never past limit: a small file that expands without bound is refused."""
    parts, size, data = [], 0, raw
    while not decompressor.eof:
        part = decompressor.decompress(data, max_length=min(limit + 1 - size, 2**24))
        data = getattr(decompressor, "unconsumed_tail", b"")  # zlib hands back what it did not read; xz, bz2 keep it
        if not part and not data and getattr(decompressor, "needs_input", True):
            raise EOFError("the compressed data ends before its end marker")
        parts.append(part)
        size += len(part)
        if size > limit:
            raise SnapshotError(f"{path}: expands past {limit / 2**20:,.0f} MiB ({MAX_EXPANSION}× its "
                                f"{len(raw) / 2**20:,.1f} MiB): refused as a decompression bomb, not read")
    return b"".join(parts)


@contextmanager
def _memory_capped(extra_bytes: int) -> Iterator[None]:
    """The process may map at most extra_bytes more while inside (Linux): a pickle whose memo claims gigabytes (an
    88-byte file can) fails with MemoryError instead of taking the machine's memory. Elsewhere: no cap."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        yield
        return
    cap = mapped + extra_bytes
    if any(limit != resource.RLIM_INFINITY and limit <= cap for limit in (soft, hard)):
        yield  # already capped as tightly
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _check_shape(snapshot: Any, path: str | os.PathLike) -> dict:
    if not isinstance(snapshot, dict) or "segments" not in snapshot:
        kind = type(snapshot).__name__
        raise SnapshotError(f"{path}: not a CUDA memory snapshot (a pickled {kind} without 'segments')")
    if not isinstance(snapshot["segments"], list):
        raise SnapshotError(f"{path}: not a CUDA memory snapshot ('segments' is not a list)")
    traces = snapshot.setdefault("device_traces", [])
    if not isinstance(traces, list) or not all(isinstance(trace, list) for trace in traces):
        raise SnapshotError(f"{path}: not a CUDA memory snapshot ('device_traces' is not a list of lists)")
    return snapshot


def load_snapshot(path: str | os.PathLike) -> dict:
    """Read a memory snapshot pickle (optionally xz/gzip/bz2 compressed) into plain Python data.

    Raises SnapshotError (one-line message) for a missing, corrupt or non-snapshot file.
    """
    raw = _read_bytes(path)
    budget = OBJECTS_PER_PICKLE_BYTE * len(raw) + HEADROOM
    try:
        with _memory_capped(budget):
            snapshot = _SnapshotUnpickler(io.BytesIO(raw)).load()
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from exc
    except MemoryError:
        raise SnapshotError(f"{path}: asks for more than {budget / 2**30:,.1f} GiB to unpickle its "
                            f"{len(raw) / 2**20:,.1f} MiB: refused, not a plausible snapshot") from None
    except Exception as exc:  # pickle raises many types on garbage: all mean "not a snapshot"
        raise SnapshotError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc})") from exc
    return _check_shape(snapshot, path)
