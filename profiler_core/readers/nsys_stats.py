"""A directory of `nsys stats --format csv` files (one stats set, or the one --prefix names)."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.readers.base import ReadOptions


class NsysStatsReader:
    name, what = "nsys-stats", "stats directory"

    def claims(self, path: Path) -> bool:
        return path.is_dir() and not (path / rundir.MANIFEST).is_file()

    def read(self, path: Path, options: ReadOptions) -> dict:
        from sysprof.profiler_core.kernels.summary import analyze_stats_dir

        return analyze_stats_dir(path, options.prefix, options.phase_names)
