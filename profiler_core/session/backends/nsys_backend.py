"""Nsight Systems: wraps the runner from outside, captures the cudaProfilerStart/Stop window.

With ranks, torchrun starts one nsys per rank (`torchrun --no-python nsys profile … python -m …`), so each rank has
its own report, named by its global and local rank through nsys's %q{ENV} expansion; place_rank_outputs then moves
each into that rank's directory, where the single-process code reads it.
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.base.rundir import NSYS_OUTPUT, rank_dir
from sysprof.profiler_core.kernels.nsys.commands import StatsJob, export_report, profile_argv
from sysprof.profiler_core.kernels.nsys.locate import nsys_version
from sysprof.profiler_core.readers import NSYS_SQLITE_READER

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution

RANK_OUTPUT = f"{NSYS_OUTPUT}-rank%q{{RANK}}-local%q{{LOCAL_RANK}}"
RANK_FILE = re.compile(rf"{NSYS_OUTPUT}-rank(\d+)-local(\d+)(\.nsys-rep|\.qdstrm)$")


class NsysBackend:
    name, capture = "nsys", "nsys"

    def __init__(self, nsys: Path, extra_args: list[str] | None = None):
        self.nsys, self.extra_args = nsys, extra_args
        self.stats_jobs: list[StatsJob] = []
        self.export_s = 0.0

    def version(self) -> str | None:
        return nsys_version(self.nsys)

    def launcher(self, pass_dir: Path, ranks: bool) -> list[str]:
        return profile_argv(self.nsys, pass_dir / (RANK_OUTPUT if ranks else NSYS_OUTPUT), [], self.extra_args)

    def place_rank_outputs(self, pass_dir: Path) -> None:
        for path in sorted(pass_dir.iterdir()):
            found = RANK_FILE.match(path.name)
            if found:
                target = rank_dir(pass_dir, int(found[1]), int(found[2]))
                target.mkdir(parents=True, exist_ok=True)
                path.replace(target / f"{NSYS_OUTPUT}{found[3]}")

    def attribute(self, pass_dir: Path) -> KernelAttribution:
        """Export the report to sqlite, start `nsys stats` beside the analysis, and read the kernels from the sqlite."""
        started = time.monotonic()
        result = export_report(self.nsys, pass_dir)
        self.export_s += time.monotonic() - started
        if not result.ok or result.sqlite_path is None:  # an ok result always names its sqlite
            raise KernelReportError(result.error or "nsys produced no report")
        self.stats_jobs.append(StatsJob(self.nsys, result.sqlite_path, pass_dir))
        return NSYS_SQLITE_READER.attribute(result.sqlite_path)  # the reader `sysprof analyze X.sqlite` uses

    def finish(self) -> dict[str, float]:
        """Wait for the stats CSVs; seconds spent exporting, writing stats, and waiting for them after the analysis."""
        waited = time.monotonic()
        for job in self.stats_jobs:
            job.finish()
        waited = time.monotonic() - waited
        stats_s = sum(job.job.seconds for job in self.stats_jobs)
        self.stats_jobs = []
        return {"export": self.export_s, "stats": stats_s, "stats_wait": waited}
