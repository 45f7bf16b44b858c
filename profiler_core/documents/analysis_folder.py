"""A run's kernels/ or memory/ folder: where each of its files is, so that no front end names them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sysprof.profiler_core.base import rundir


@dataclass(frozen=True)
class AnalysisFolder:
    path: Path

    @property
    def analysis_file(self) -> Path:
        return self.path / rundir.ANALYSIS

    @property
    def kernel_table(self) -> Path:
        """phase_kernels.csv: one row per kernel name and phase."""
        return self.path / rundir.PHASE_KERNELS

    @property
    def attention_table(self) -> Path:
        """attention_kernels.csv: naive attention's kernels by part (scores, softmax, weighted sum)."""
        return self.path / rundir.ATTENTION_KERNELS

    @property
    def snapshot(self) -> Path:
        return self.path / rundir.MEMORY_SNAPSHOT

    def read_analysis(self) -> dict | None:
        """analysis.json; None where there is none; RunDirError, naming the file, where it is damaged."""
        return rundir.read_json(self.analysis_file) if self.analysis_file.is_file() else None
