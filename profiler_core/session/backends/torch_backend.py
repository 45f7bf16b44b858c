"""torch.profiler: recorded inside the runner over the measured steps; no external tool needed."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysprof.profiler_core.base.rundir import TORCH_TRACE
from sysprof.profiler_core.readers import TORCH_TRACE_READER

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution


class TorchBackend:
    name, capture = "torch", "torch"

    def version(self) -> str | None:
        return None  # the runner's torch version is in the pass's manifest

    def launcher(self, pass_dir: Path, ranks: bool) -> list[str]:
        return []

    def place_rank_outputs(self, pass_dir: Path) -> None:
        """Each rank's runner writes its trace in its own directory already."""

    def attribute(self, pass_dir: Path) -> KernelAttribution:
        return TORCH_TRACE_READER.attribute(pass_dir / TORCH_TRACE)  # the reader `sysprof analyze X.json` uses

    def finish(self) -> dict[str, float]:
        return {}  # nothing runs beside the analysis
