"""A run directory: the analyses its profiled and memory passes saved (kernels, memory, or both)."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import AnalyzeError
from sysprof.profiler_core.readers.base import ReadOptions


class RunDirReader:
    name, what = "run-dir", "run directory"

    def claims(self, path: Path) -> bool:
        return path.is_dir() and (path / rundir.MANIFEST).is_file()

    def read(self, path: Path, options: ReadOptions) -> dict:
        saved = {kind: rundir.read_json(path / sub / rundir.ANALYSIS)
                 for kind, sub in (("kernels", rundir.KERNELS_DIR), ("memory", rundir.MEMORY_DIR))}
        found = {kind: analysis for kind, analysis in saved.items() if analysis}
        if not found:
            raise AnalyzeError(f"{path}: this run has no kernel or memory analysis; run it with "
                               "--profiler nsys|torch or --memory")
        return found["kernels"] | {"memory": found["memory"]} if len(found) == 2 else next(iter(found.values()))
