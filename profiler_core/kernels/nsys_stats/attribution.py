"""Fallback phase attribution from `nsys stats` CSVs when no sqlite export exists.

nsys's nvtx_kern_sum matches kernels to NVTX ranges pushed on the *same thread*
that launched them.  PyTorch launches backward kernels from its autograd thread,
so `backward` gets almost nothing here and those kernels show up with an empty
range; the numbers are reported as nsys gives them, with a note saying so.
Summed kernel times carry no start or end, so there is no GPU span to measure
busy time or launch waits over: busy_pct and launch are None here (LAUNCH_NOTE).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from models.phases import ATTRIBUTED_PHASES, OTHER, PHASE_OF_RANGE
from profiler_core.errors import KernelReportError
from profiler_core.kernels.classify import classify_kernels
from profiler_core.kernels.nsys_stats.csv_reader import find_report_file, read_stats_csv

BACKWARD_NOTE = (
    "phases from nsys nvtx_kern_sum: nsys matches kernels to ranges on the same thread, so "
    "backward (launched by the autograd thread) is undercounted; use the sqlite export for "
    "launch-time attribution"
)
LAUNCH_NOTE = ("busy % and the launch-bound verdict need each kernel's start and end: analyze the "
               "sqlite export (nsys export --type sqlite)")


def attribution_from_stats_dir(stats_dir: str | Path) -> dict:
    """{"phases": {phase: {gpu_ns, kernels, by_class, wall_ns, busy_pct, launch}}, "notes": [...]}."""
    stats_dir = Path(stats_dir)
    kernel_rows = phase_kernel_rows_from_stats_dir(stats_dir)
    wall_ns = _phase_wall_ns(stats_dir)
    phases = {phase: _phase_entry(kernel_rows[kernel_rows["phase"] == phase], wall_ns.get(phase, 0))
              for phase in ATTRIBUTED_PHASES}
    totals = _kernel_totals_by_class(stats_dir)
    if totals is not None:
        phases[OTHER] = _other_from_totals(totals, [phases[p] for p in ATTRIBUTED_PHASES if p != OTHER])
    notes = [BACKWARD_NOTE, LAUNCH_NOTE]
    unranged = kernel_rows[kernel_rows["range"] == ""]
    if len(unranged):
        notes.append(f"{int(unranged['instances'].sum())} kernels ({unranged['total_ns'].sum() / 1e6:.3f} ms) "
                     "have no NVTX range on their launching thread; counted as 'other' (in a training "
                     "step these are mostly backward kernels)")
    return {"phases": phases, "notes": notes}


def phase_kernel_rows_from_stats_dir(stats_dir: str | Path) -> pd.DataFrame:
    """nvtx_kern_sum rows of the phase ranges plus unranged kernels, with phase and class."""
    stats_dir = Path(stats_dir)
    path = find_report_file(stats_dir, "nvtx_kern_sum")
    if path is None:
        raise KernelReportError(f"{stats_dir}: no nvtx_kern_sum CSV, cannot attribute phases")
    rows = read_stats_csv(path, "nvtx_kern_sum")
    if rows.empty:
        return pd.DataFrame(columns=["phase", "range", "name", "class", "instances", "total_ns"])
    rows = rows.assign(range=rows["range"].fillna("").replace("nan", ""))
    # nvtx_kern_sum repeats a kernel under every enclosing range; keep the phase
    # ranges and the kernels outside any range, so nothing is counted twice.
    rows = rows[rows["range"].isin(PHASE_OF_RANGE) | (rows["range"] == "")].copy()
    rows["phase"] = rows["range"].map(PHASE_OF_RANGE).fillna(OTHER)
    rows["class"] = classify_kernels(rows["name"])
    return rows.reset_index(drop=True)


def _phase_entry(rows: pd.DataFrame, wall_ns: int) -> dict:
    gpu_ns = int(rows["total_ns"].sum())
    by_class = rows.groupby("class")["total_ns"].sum().sort_values(ascending=False)
    return {
        "gpu_ns": gpu_ns,
        "kernels": int(rows["instances"].sum()),
        "by_class": {str(c): int(ns) for c, ns in by_class.items()},
        "wall_ns": int(wall_ns),
        "busy_pct": None,  # no per-kernel times (module docstring)
        "launch": None,
    }


def _kernel_totals_by_class(stats_dir: Path) -> pd.DataFrame | None:
    path = find_report_file(stats_dir, "cuda_gpu_kern_sum")
    if path is None:
        return None
    kernels = read_stats_csv(path, "cuda_gpu_kern_sum")
    if kernels.empty:
        return None
    return pd.concat([kernels["total_ns"], kernels["instances"], classify_kernels(kernels["name"])], axis=1)


def _other_from_totals(totals: pd.DataFrame, phases: list[dict]) -> dict:
    # 'other' is everything the phase ranges did not get, including kernels that
    # sit only under non-phase ranges (e.g. `step N` outside forward/backward).
    by_class = totals.groupby("class")["total_ns"].sum()
    for phase in phases:
        by_class = by_class.sub(pd.Series(phase["by_class"], dtype="int64"), fill_value=0)
    by_class = by_class[by_class > 0].sort_values(ascending=False)
    kernels = int(totals["instances"].sum()) - sum(p["kernels"] for p in phases)
    return {"gpu_ns": int(by_class.sum()), "kernels": max(kernels, 0),
            "by_class": {str(c): int(ns) for c, ns in by_class.items()}, "wall_ns": 0, "busy_pct": None, "launch": None}


def _phase_wall_ns(stats_dir: Path) -> dict[str, int]:
    path = find_report_file(stats_dir, "nvtx_sum")
    if path is None:
        return {}
    ranges = read_stats_csv(path, "nvtx_sum")
    if ranges.empty:
        return {}
    ranges = ranges[ranges["range"].isin(PHASE_OF_RANGE)]
    return {PHASE_OF_RANGE[name]: int(ns) for name, ns in ranges.groupby("range")["total_ns"].sum().items()}
