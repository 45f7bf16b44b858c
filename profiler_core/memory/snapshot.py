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
import gzip
import io
import lzma
import os
import pickle
from typing import Any

from sysprof.profiler_core.base.errors import SnapshotError

_MAGIC_DECOMPRESSORS = (
    (b"\xfd7zXZ\x00", lzma.decompress),
    (b"\x1f\x8b", gzip.decompress),
    (b"BZh", bz2.decompress),
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


def _read_bytes(path: str | os.PathLike) -> bytes:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    for magic, decompress in _MAGIC_DECOMPRESSORS:
        if raw.startswith(magic):
            try:
                return decompress(raw)
            except (lzma.LZMAError, OSError, EOFError, ValueError) as exc:
                raise SnapshotError(f"{path}: corrupt compressed data ({exc})") from exc
    return raw


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
    try:
        snapshot = _SnapshotUnpickler(io.BytesIO(raw)).load()
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from exc
    except Exception as exc:  # pickle raises many types on garbage: all mean "not a snapshot"
        raise SnapshotError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc})") from exc
    return _check_shape(snapshot, path)
