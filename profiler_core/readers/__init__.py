"""Readers of every input the tool analyses, in one registry: `sysprof analyze` asks each in turn whether it claims
a path, and the profiled pass reads its own outputs through the same readers (session/backends, session/analysis).
A new input format is one reader module, one line here and one fixture. Nothing here loads pandas or torch until a
file is read."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.readers.base import KernelReader, Reader, ReadOptions
from sysprof.profiler_core.readers.memory_snapshot import MemorySnapshotReader
from sysprof.profiler_core.readers.nsys_report import NsysReportReader
from sysprof.profiler_core.readers.nsys_sqlite import NsysSqliteReader
from sysprof.profiler_core.readers.nsys_stats import NsysStatsReader
from sysprof.profiler_core.readers.run_dir import RunDirReader
from sysprof.profiler_core.readers.torch_trace import TorchTraceReader

NSYS_SQLITE_READER, TORCH_TRACE_READER = NsysSqliteReader(), TorchTraceReader()
MEMORY_SNAPSHOT_READER = MemorySnapshotReader()
# In the order they are asked: a run directory before any other directory.
READERS: tuple[Reader, ...] = (RunDirReader(), NsysStatsReader(), NSYS_SQLITE_READER, NsysReportReader(),
                               TORCH_TRACE_READER, MEMORY_SNAPSHOT_READER)


def reader_for(path: Path) -> Reader | None:
    return next((reader for reader in READERS if reader.claims(path)), None)


def expected_inputs() -> str:
    """What `analyze` takes, in words: "a run directory, stats directory, .sqlite, … or memory snapshot .pickle"."""
    names = [reader.what for reader in READERS]
    return f"a {', '.join(names[:-1])} or {names[-1]}"


__all__ = ["KernelReader", "MEMORY_SNAPSHOT_READER", "NSYS_SQLITE_READER", "READERS", "ReadOptions", "Reader",
           "TORCH_TRACE_READER", "expected_inputs", "reader_for"]
