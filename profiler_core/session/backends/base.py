"""The interface every kernel-table backend implements."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution


class Backend(Protocol):
    name: str
    capture: str  # the runner's --capture for the profiled pass

    def version(self) -> str | None: ...

    def launcher(self, pass_dir: Path, ranks: bool) -> list[str]:
        """The command the runner runs under ([] when the runner records by itself); ranks: one per rank."""

    def place_rank_outputs(self, pass_dir: Path) -> None:
        """Move what each rank's profiler wrote into that rank's directory (where attribute() reads it)."""

    def attribute(self, pass_dir: Path) -> KernelAttribution:
        """Labelled kernels from what the profiled pass left in pass_dir (KernelReportError if nothing)."""

    def finish(self) -> dict[str, float]:
        """Wait for what attribute() left running beside the analysis; seconds by step, for the time breakdown."""
