"""`sysprof analyze PATH`: kernel tables or memory analysis from whatever the user has at hand. Which reader takes
a path is the readers registry's to say (profiler_core/readers/); here only the errors every reader shares."""
from __future__ import annotations

import lzma
import pickle
import sqlite3
import zlib
from pathlib import Path

from sysprof.profiler_core.base.errors import DAMAGED_DATA, AnalyzeError, SysprofError
from sysprof.profiler_core.readers import ReadOptions, expected_inputs, reader_for
from sysprof.profiler_core.readers.nsys_stats import NsysStatsReader

DAMAGED = (*DAMAGED_DATA, sqlite3.DatabaseError, pickle.UnpicklingError, lzma.LZMAError, zlib.error)


def analyze_path(path: Path, nsys: str | None = None, prefix: str | None = None,
                 phase_names: dict[str, str] | None = None) -> dict:
    """prefix: which `nsys stats` set of a directory holding several (`--prefix`); phase_names: each phase's NVTX
    range where a profile's are not names the tool knows (`--phase`)."""
    if not path.exists():
        raise AnalyzeError(f"{path}: no such file or directory")
    reader = reader_for(path)
    if prefix is not None and not isinstance(reader, NsysStatsReader):
        raise AnalyzeError(f"--prefix names a set of nsys stats CSVs in a directory; {path} is not such a directory")
    if reader is None:
        raise AnalyzeError(f"{path}: expected {expected_inputs()}")
    try:  # the readers raise a SysprofError with their one-line reason where they can
        return reader.read(path, ReadOptions(nsys, prefix, phase_names))
    except SysprofError:
        raise
    except DAMAGED as exc:
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise AnalyzeError(f"{path} could not be read; is it damaged, or not what its name says? "
                           f"({type(exc).__name__}: {detail:.120})") from None
