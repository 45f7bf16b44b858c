"""Fallback phase attribution from `nsys stats` CSVs when no sqlite export exists.

nsys's nvtx_kern_sum matches kernels to NVTX ranges pushed on the *same thread*
that launched them.  PyTorch launches backward kernels from its autograd thread,
so `backward` gets almost nothing there and those kernels show up with an empty
range, on a thread of their own (the TID column).  Where the profile has a
backward range, kernels outside every range launched from a thread other than the
one that pushed the phase ranges are counted as backward (AUTOGRAD_NOTE says so);
on the H200 fixture that gives backward the sqlite analysis's kernels to the
nanosecond.  Summed kernel times carry no start or end, so there is no GPU span to
measure busy time or launch waits over: busy_pct and launch are None (LAUNCH_NOTE).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from sysprof.models.phases import ATTRIBUTED_PHASES, BACKWARD, OTHER, PHASE_OF_RANGE, STEP_RANGE
from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels.capture_check import fit_to_capture
from sysprof.profiler_core.kernels.classify import classify_kernels
from sysprof.profiler_core.kernels.nsys_stats.csv_reader import find_report_file, read_stats_csv
from sysprof.profiler_core.kernels.phase_names import rename_phase_ranges

BACKWARD_NOTE = (
    "phases from nsys nvtx_kern_sum: nsys matches kernels to ranges on the same thread, so "
    "backward (launched by the autograd thread) is undercounted; use the sqlite export for "
    "launch-time attribution"
)
AUTOGRAD_NOTE = (
    "backward includes {kernels} kernels ({ms:.3f} ms) launched outside every range by thread(s) {threads}, not the "
    "thread {main} that pushed the phase ranges: PyTorch's autograd engine launches backward from its own thread, so "
    "they are assumed to be backward's (the sqlite export checks each kernel by its launch time)"
)
LAUNCH_NOTE = ("busy % and the launch-bound verdict need each kernel's start and end: analyze the "
               "sqlite export (nsys export --type sqlite)")


def attribution_from_stats_dir(stats_dir: str | Path, prefix: str | None = None,
                               phase_names: Mapping[str, str] | None = None) -> dict:
    """{"phases": {phase: {gpu_ns, kernels, by_class, wall_ns, busy_pct, launch}}, "notes": [...]}.
    prefix: which stats set of the directory (csv_reader.find_report_file); phase_names: the range name of each
    phase where the profile's are not ones kernels/phase_names.py knows."""
    stats_dir = Path(stats_dir)
    kernel_rows, naming_notes = _named_kernel_rows(stats_dir, prefix, phase_names)
    wall_ns = _phase_wall_ns(stats_dir, prefix, phase_names)
    phases = {phase: _phase_entry(kernel_rows[kernel_rows["phase"] == phase], wall_ns.get(phase, 0))
              for phase in ATTRIBUTED_PHASES}
    totals = _kernel_totals_by_class(stats_dir, prefix)
    capture_notes = []
    if totals is not None:  # a phase that cannot fit the capture double counts: withheld before 'other' is made
        capture_notes = fit_to_capture(phases, int(totals["total_ns"].sum()), int(totals["instances"].sum()),
                                       _own_range_names(kernel_rows))
        phases[OTHER] = _other_from_totals(totals, [phases[p] for p in ATTRIBUTED_PHASES if p != OTHER])
    notes = [*naming_notes, _backward_note(kernel_rows, wall_ns.get(BACKWARD, 0)), LAUNCH_NOTE,
             *_unbalanced_notes(stats_dir, prefix, phase_names), *capture_notes]
    unranged = kernel_rows[(kernel_rows["range"] == "") & (kernel_rows["phase"] == OTHER)]
    if len(unranged):
        notes.append(f"{int(unranged['instances'].sum())} kernels ({unranged['total_ns'].sum() / 1e6:.3f} ms) "
                     "have no NVTX range on their launching thread; counted as 'other' (in a training "
                     "step these are mostly backward kernels)")
    return {"phases": phases, "notes": notes}


def phase_kernel_rows_from_stats_dir(stats_dir: str | Path, prefix: str | None = None,
                                     phase_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """nvtx_kern_sum rows of the phase ranges plus unranged kernels, with phase and class."""
    return _named_kernel_rows(Path(stats_dir), prefix, phase_names)[0]


def _named_kernel_rows(stats_dir: Path, prefix: str | None,
                       phase_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, list[str]]:
    path = find_report_file(stats_dir, "nvtx_kern_sum", prefix)
    if path is None:
        raise KernelReportError(f"{stats_dir}: no nvtx_kern_sum CSV, cannot attribute phases")
    rows = read_stats_csv(path, "nvtx_kern_sum")
    if rows.empty:
        return pd.DataFrame(columns=["phase", "range", "own_range", "name", "class", "instances", "total_ns"]), []
    rows = rows.assign(range=rows["range"].fillna("").replace("nan", ""))
    rows["own_range"] = rows["range"]
    rows["range"], notes = rename_phase_ranges(rows["range"], phase_names, instances=False)
    return _phase_rows(rows), notes


def _own_range_names(rows: pd.DataFrame) -> dict[str, str]:
    """Phase → the profile's own name of its range ('fwd' for forward), as the kernel rows carry it."""
    named = rows[rows["range"] != ""].drop_duplicates("phase")
    return dict(zip(named["phase"], named["own_range"]))


def _phase_rows(rows: pd.DataFrame) -> pd.DataFrame:
    # nvtx_kern_sum repeats a kernel under every enclosing range; keep the phase
    # ranges and the kernels outside any range, so nothing is counted twice.
    rows = rows[rows["range"].isin(PHASE_OF_RANGE) | (rows["range"] == "")].copy()
    rows["phase"] = rows["range"].map(PHASE_OF_RANGE).fillna(OTHER)
    rows.loc[_autograd_thread(rows), "phase"] = BACKWARD
    rows["class"] = classify_kernels(rows["name"])
    return rows.reset_index(drop=True)


def _phase_threads(rows: pd.DataFrame) -> set:
    """The thread(s) that pushed the phase ranges: the training loop's."""
    return set(rows.loc[rows["range"].isin(PHASE_OF_RANGE), "tid"]) if "tid" in rows else set()


def _autograd_thread(rows: pd.DataFrame) -> pd.Series:
    """Rows outside every range, launched from another thread than the phase ranges', in a profile with a backward
    range: the autograd engine's kernels (module docstring). All False where the CSV has no TID column."""
    main = _phase_threads(rows)
    has_backward = (rows["range"].map(PHASE_OF_RANGE) == BACKWARD).any()
    if not main or not has_backward:
        return pd.Series(False, index=rows.index)
    return (rows["range"] == "") & ~rows["tid"].isin(main)


def _backward_note(rows: pd.DataFrame, backward_wall_ns: int) -> str:
    autograd = rows[(rows["phase"] == BACKWARD) & (rows["range"] == "")]
    if autograd.empty:
        return BACKWARD_NOTE
    note = AUTOGRAD_NOTE.format(kernels=int(autograd["instances"].sum()), ms=autograd["total_ns"].sum() / 1e6,
                                threads=", ".join(str(t) for t in sorted(set(autograd["tid"]))),
                                main=", ".join(str(t) for t in sorted(_phase_threads(rows))))
    if backward_wall_ns and autograd["total_ns"].sum() > backward_wall_ns:
        note += (f"; but they add up to more than the backward ranges' own {backward_wall_ns / 1e6:.3f} ms, so some "
                 "are not backward's")
    return note


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


def _kernel_totals_by_class(stats_dir: Path, prefix: str | None) -> pd.DataFrame | None:
    path = find_report_file(stats_dir, "cuda_gpu_kern_sum", prefix)
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


def _phase_wall_ns(stats_dir: Path, prefix: str | None, phase_names: Mapping[str, str] | None) -> dict[str, int]:
    path = find_report_file(stats_dir, "nvtx_sum", prefix)
    if path is None:
        return {}
    ranges = read_stats_csv(path, "nvtx_sum")
    if ranges.empty:
        return {}
    ranges["range"] = rename_phase_ranges(ranges["range"].fillna("").astype(str), phase_names, instances=False)[0]
    ranges = ranges[ranges["range"].isin(PHASE_OF_RANGE)]
    return {PHASE_OF_RANGE[name]: int(ns) for name, ns in ranges.groupby("range")["total_ns"].sum().items()}


def _unbalanced_notes(stats_dir: Path, prefix: str | None, phase_names: Mapping[str, str] | None) -> list[str]:
    """nvtx_sum has no capture span to hold ranges against; the step ranges together stand in for it. A range
    longer than all of them cannot be inside one step: pushed before the capture, or never popped (nsys closes
    such a range at the capture's end)."""
    path = find_report_file(stats_dir, "nvtx_sum", prefix)
    ranges = read_stats_csv(path, "nvtx_sum") if path else None
    if ranges is None or ranges.empty or "max_ns" not in ranges:
        return []
    ranges["range"] = rename_phase_ranges(ranges["range"].fillna("").astype(str), phase_names, instances=False)[0]
    steps = ranges["range"].str.match(STEP_RANGE)
    if not steps.any():
        return []
    all_steps_ns = int(ranges.loc[steps, "total_ns"].sum())
    longer = ranges[~steps & (ranges["max_ns"] > all_steps_ns)]
    if longer.empty:
        return []
    named = ", ".join(f"{name!r} ({ns / 1e6:.3f} ms)" for name, ns in zip(longer["range"], longer["max_ns"]))
    return [f"unbalanced NVTX ranges: {named}, each longer than all {int(steps.sum())} step ranges together "
            f"({all_steps_ns / 1e6:.3f} ms): pushed before the capture or never popped"]
