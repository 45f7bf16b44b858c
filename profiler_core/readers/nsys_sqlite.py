"""An Nsight Systems report exported to sqlite: kernels attributed to phases by the launching call's time."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysprof.profiler_core.readers.base import ReadOptions

if TYPE_CHECKING:
    from sysprof.profiler_core.kernels.attribution import KernelAttribution


class NsysSqliteReader:
    name, what = "nsys-sqlite", ".sqlite"

    def claims(self, path: Path) -> bool:
        return path.is_file() and path.suffix == ".sqlite"

    def attribute(self, path: Path, phase_names: dict[str, str] | None = None) -> KernelAttribution:
        from sysprof.profiler_core.kernels.attribution import attribute_kernels  # pandas: only once there is a report

        return attribute_kernels(path, phase_names)

    def read(self, path: Path, options: ReadOptions) -> dict:
        from sysprof.profiler_core.kernels.summary import analyze_attribution

        return analyze_attribution(self.attribute(path, options.phase_names), str(path), self.name)
