"""Nsight Systems: wraps the runner from outside, captures the cudaProfilerStart/Stop window."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profiler_core.errors import KernelReportError
from profiler_core.kernels.nsys.commands import postprocess_report, profile_argv
from profiler_core.kernels.nsys.locate import nsys_version
from profiler_core.rundir import NSYS_OUTPUT

if TYPE_CHECKING:
    from profiler_core.kernels.attribution import KernelAttribution


class NsysBackend:
    name, capture = "nsys", "nsys"

    def __init__(self, nsys: Path, extra_args: list[str] | None = None):
        self.nsys, self.extra_args = nsys, extra_args

    def version(self) -> str | None:
        return nsys_version(self.nsys)

    def wrap(self, runner_argv: list[str], pass_dir: Path) -> list[str]:
        return profile_argv(self.nsys, pass_dir / NSYS_OUTPUT, runner_argv, self.extra_args)

    def attribute(self, pass_dir: Path) -> KernelAttribution:
        result = postprocess_report(self.nsys, pass_dir)
        if not result.ok or result.sqlite_path is None:  # an ok result always names its sqlite
            raise KernelReportError(result.error or "nsys produced no report")
        from profiler_core.kernels.attribution import attribute_kernels  # pandas: only once there is a report

        return attribute_kernels(result.sqlite_path)
