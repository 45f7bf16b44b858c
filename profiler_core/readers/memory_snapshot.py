"""A CUDA caching-allocator snapshot (torch.cuda.memory._snapshot pickle, optionally compressed)."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.readers.base import ReadOptions

SUFFIXES = (".pickle", ".pkl", ".xz", ".gz")


class MemorySnapshotReader:
    name, what = "memory-snapshot", "memory snapshot .pickle"

    def claims(self, path: Path) -> bool:
        return path.is_file() and path.name.endswith(SUFFIXES)

    def read(self, path: Path, options: ReadOptions, shape_hint: dict | None = None) -> dict:
        from sysprof.profiler_core.memory.analyze import analyze_snapshot

        return analyze_snapshot(path, shape_hint=shape_hint)
