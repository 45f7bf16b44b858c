"""The interface every kernel-table backend implements."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from profiler_core.kernels.attribution import KernelAttribution




class Backend(Protocol):
    name: str
    capture: str  # the runner's --capture for the profiled pass

    def version(self) -> str | None: ...

    def wrap(self, runner_argv: list[str], pass_dir: Path) -> list[str]:
        """The command that runs the runner under this profiler."""

    def attribute(self, pass_dir: Path) -> KernelAttribution:
        """Labelled kernels from what the profiled pass left in pass_dir (KernelReportError if nothing)."""
