"""A torch.profiler Chrome trace (.json): kernels attributed to phases through their record_function ranges."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysprof.profiler_core.readers.base import ReadOptions

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution


class TorchTraceReader:
    name, what = "torch", "torch trace .json"

    def claims(self, path: Path) -> bool:
        return path.is_file() and path.suffix == ".json"

    def attribute(self, path: Path, phase_names: dict[str, str] | None = None) -> KernelAttribution:
        from sysprof.profiler_core.kernels.torch_trace import attribute_torch_trace  # pandas: only with a trace

        return attribute_torch_trace(path)

    def read(self, path: Path, options: ReadOptions) -> dict:
        from sysprof.profiler_core.kernels.summary import analyze_attribution

        return analyze_attribution(self.attribute(path), str(path), self.name)
