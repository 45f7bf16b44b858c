"""Kernel tables of a run directory and the view over them (phase, name filter, sort): pandas, run in workers.

pandas is imported inside the functions: importing the app must stay fast (first frame ≤ 0.5 s).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sysprof.profiler_core.api import runs, vocab

if TYPE_CHECKING:
    import pandas as pd

ALL_PHASES = "all"
KERNEL_TABLES = ("kernels", "module types")  # what `t` cycles through on the Kernels screen
SORT_COLUMNS = ("total_ns", "pct_of_phase", "instances", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns",
                "name", "class", "phase")


@dataclass(frozen=True)
class KernelView:
    name_filter: str = ""
    phase: str = ALL_PHASES
    sort_by: str = "total_ns"
    descending: bool = True

    def next_sort(self) -> KernelView:
        position = SORT_COLUMNS.index(self.sort_by) if self.sort_by in SORT_COLUMNS else -1
        return replace(self, sort_by=SORT_COLUMNS[(position + 1) % len(SORT_COLUMNS)])

    def sorted_by(self, column: str) -> KernelView:
        """Click a header: sort by it, or flip the order when it already is the sort column."""
        if column == self.sort_by:
            return replace(self, descending=not self.descending)
        return replace(self, sort_by=column, descending=column not in ("name", "class", "phase"))


@dataclass
class KernelData:
    """Everything the Kernels screen shows for one run; `table` is None when the run has no kernel tables."""
    kernels_dir: Path
    table: pd.DataFrame | None = None
    analysis: dict = field(default_factory=dict)
    phases: tuple[str, ...] = ()  # what `p` cycles: all, each phase, then each attention sub-range
    problem: str | None = None
    parts: pd.DataFrame | None = None  # kernels per attention sub-range (naive attention), labelled as phases

    def rows_for(self, phase: str) -> pd.DataFrame:
        """The table a view of `phase` filters: the sub-range table for an attention part, else the phase table
        (loaded: a view exists only then)."""
        if self.parts is not None and phase in set(self.parts["phase"]):
            return self.parts
        assert self.table is not None
        return self.table


def apply_view(table: pd.DataFrame, view: KernelView) -> pd.DataFrame:
    """Rows of the phase, whose name contains the filter text (case-insensitive), sorted."""
    rows = table
    if view.phase != ALL_PHASES:
        rows = rows[rows["phase"] == view.phase]
    if view.name_filter:
        rows = rows[rows["name"].str.contains(view.name_filter, case=False, regex=False, na=False)]
    if view.sort_by in rows.columns:
        rows = rows.sort_values(view.sort_by, ascending=not view.descending, kind="stable", na_position="last")
    return rows


def load_kernel_data(kernels_dir: Path) -> KernelData:
    """phase_kernels.csv, analysis.json and, with naive attention, attention_kernels.csv."""
    import pandas as pd

    data = KernelData(kernels_dir)
    folder = runs.AnalysisFolder(kernels_dir)
    if not folder.kernel_table.is_file():
        return data  # absent, not damaged: the screen says why from the run (tui/model/advice.py)
    try:
        data.table = pd.read_csv(folder.kernel_table)
        data.table["phase"] = data.table["phase"].astype(str)
        data.analysis = folder.read_analysis() or {}
        data.parts = pd.read_csv(folder.attention_table) if folder.attention_table.is_file() else None
        parts = () if data.parts is None else tuple(dict.fromkeys(data.parts["phase"].astype(str)))
        data.phases = (ALL_PHASES, *dict.fromkeys(data.table["phase"]), *parts)
    except (OSError, *vocab.DAMAGED_DATA) as exc:  # a damaged file, or one from another version: this screen says so
        data.table, data.problem = None, f"cannot read the kernel tables in {kernels_dir}: {type(exc).__name__}: {exc}"
    return data
