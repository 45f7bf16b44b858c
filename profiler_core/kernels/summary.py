"""The `sysprof analyze --json` document for kernel reports (DESIGN.md section 2).

Keys the contract fixes: source, kernels[{name, class, instances, total_ns,
avg_ns, med_ns, min_ns, max_ns, std_ns}], phases{forward|backward|optimizer|other:
{gpu_ns, kernels, by_class}}, gemm_fraction{phase}.  Added here: source_kind,
phases.*.{wall_ns, busy_pct, launch, ...}, attention, steps, totals, notes,
modules (GPU time by module type with --nvtx-modules; module_stats.py) and
communication (NCCL kernel time, exposed time and overlap; communication.py).

busy_pct = the share of the phase's GPU span with any of its kernels running: per
phase range, from the first start to the last end of the kernels that range
launched (launch_bound.py), added up over the steps.  It never passes 100, also
for the optimizer, whose kernels mostly run after the host closed its range (the
old figure, GPU time / the ranges' wall time, read ~145% there).  `launch` holds
the span's split into busy, host-wait, kernel-wait and other, the launch-call
figures and the verdict (launch-bound or GPU-bound, reason, remedy); None for
'other'.  From nsys's CSVs alone (no per-kernel times) both are None.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from sysprof.models.phases import ATTRIBUTED_PHASES, OTHER
from sysprof.profiler_core.base.errors import KernelReportError, StatsSetError
from sysprof.profiler_core.kernels.attribution import KernelAttribution, attribute_kernels
from sysprof.profiler_core.kernels.capture_check import fit_to_capture
from sysprof.profiler_core.kernels.classify import classify_kernels
from sysprof.profiler_core.kernels.communication import communication_summary
from sysprof.profiler_core.kernels.kernel_stats import (
    attention_summary,
    busy_union_ns,
    kernel_table,
    phase_summaries,
    step_summaries,
)
from sysprof.profiler_core.kernels.module_stats import module_summary
from sysprof.profiler_core.kernels.nsys_stats.attribution import (
    attribution_from_stats_dir,
    phase_kernel_rows_from_stats_dir,
)
from sysprof.profiler_core.kernels.nsys_stats.csv_reader import (
    find_report_file,
    only_stats_set,
    read_stats_csv,
    stats_sets,
)
from sysprof.profiler_core.kernels.whole_step import STEP_ROW, whole_step

KERNEL_FIELDS = ("name", "class", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns")


def analyze_sqlite(path: str | Path, phase_names: Mapping[str, str] | None = None) -> dict:
    """Analyze JSON from an nsys sqlite export, with launch-time phase attribution."""
    return analyze_attribution(attribute_kernels(path, phase_names), str(path), "nsys-sqlite")


def analyze_attribution(attribution: KernelAttribution, source: str, source_kind: str) -> dict:
    """Analyze JSON from labelled kernels, whichever profiler recorded them."""
    kernels = attribution.kernels
    phases = phase_summaries(attribution)
    # each kernel has one label here, so this never trips; it holds the invariant for every source all the same
    capture_notes = fit_to_capture(phases, int(kernels["duration"].sum()), len(kernels))
    return {
        "source": source,
        "source_kind": source_kind,
        "kernels": _kernel_records(kernel_table(kernels, attribution.names, short_names=attribution.short_names)),
        "phases": phases,
        "gemm_fraction": {phase: phases[phase]["gemm_fraction"] for phase in ATTRIBUTED_PHASES}
        | {STEP_ROW: whole_step(phases)["gemm_fraction"]},
        "attention": attention_summary(attribution),
        "steps": step_summaries(attribution),
        "modules": module_summary(attribution),
        "communication": communication_summary(attribution),
        "totals": {
            "gpu_ns": int(kernels["duration"].sum()),
            "gpu_union_ns": busy_union_ns(kernels["start"].to_numpy(), kernels["end"].to_numpy()),
            "kernels": int(len(kernels)),
        },
        "main_thread": attribution.thread_names.get(attribution.main_tid or -1),
        "notes": [*attribution.notes, *capture_notes],
    }


def analyze_stats_dir(path: str | Path, prefix: str | None = None,
                      phase_names: Mapping[str, str] | None = None) -> dict:
    """Analyze JSON from a directory of `nsys stats --format csv` files: its only stats set, or the one prefix
    names (a directory holding several is refused, never read as a mix)."""
    stats_dir = Path(path)
    if not stats_dir.is_dir():
        raise KernelReportError(f"{stats_dir}: not a directory")
    if prefix is None:
        prefix = only_stats_set(stats_dir)
    elif prefix not in stats_sets(stats_dir):
        held = ", ".join(repr(p) for p in stats_sets(stats_dir)) or "none"
        raise StatsSetError(f"{stats_dir} has no stats set {prefix!r} (it holds: {held})")
    kernels = _stats_kernel_table(stats_dir, prefix)
    notes: list[str] = []
    try:
        attribution = attribution_from_stats_dir(stats_dir, prefix, phase_names)
        phases, notes = attribution["phases"], attribution["notes"]
    except KernelReportError as error:
        phases = {phase: _empty_phase() for phase in ATTRIBUTED_PHASES}
        phases[OTHER] = _all_other(kernels)
        notes.append(f"no phase attribution: {error}")
    return {
        "source": str(stats_dir),
        "source_kind": "nsys-stats-csv",
        "stats_prefix": prefix,
        "kernels": _kernel_records(kernels),
        "phases": phases,
        "gemm_fraction": {p: _fraction(phases[p]["by_class"].get("gemm", 0), phases[p]["gpu_ns"])
                          for p in ATTRIBUTED_PHASES}
        | {STEP_ROW: whole_step(phases)["gemm_fraction"]},
        "totals": {"gpu_ns": int(kernels["total_ns"].sum()), "kernels": int(kernels["instances"].sum())},
        "notes": notes,
    }


def phase_kernel_table(source: str | Path | KernelAttribution) -> pd.DataFrame:
    """Kernel table per phase for a UI: phase, name, class, instances, total_ns, ..., pct_of_phase.

    `source` is an nsys sqlite export, its attribution, or a stats directory (then
    with nsys's same-thread matching, see stats_attribution).
    """
    if isinstance(source, KernelAttribution):
        table = kernel_table(source.kernels, source.names, by=["phase"])
    elif Path(source).is_dir():
        table = phase_kernel_rows_from_stats_dir(source)
    else:
        return phase_kernel_table(attribute_kernels(source))
    table = table.reindex(columns=["phase", *KERNEL_FIELDS])
    table["phase"] = pd.Categorical(table["phase"].astype(str), categories=ATTRIBUTED_PHASES)
    table = table.sort_values(["phase", "total_ns"], ascending=[True, False], ignore_index=True)
    phase_totals = table.groupby("phase", observed=True)["total_ns"].transform("sum")
    table["pct_of_phase"] = (100.0 * table["total_ns"] / phase_totals).round(2)
    return table


def _stats_kernel_table(stats_dir: Path, prefix: str | None) -> pd.DataFrame:
    path = find_report_file(stats_dir, "cuda_gpu_kern_sum", prefix)
    if path is None:
        named = f" with prefix {prefix!r}" if prefix else ""
        raise KernelReportError(f"{stats_dir}: no cuda_gpu_kern_sum (or gpukernsum) CSV{named}")
    kernels = read_stats_csv(path, "cuda_gpu_kern_sum")
    if kernels.empty:
        return pd.DataFrame(columns=list(KERNEL_FIELDS))
    kernels["class"] = classify_kernels(kernels["name"])
    return kernels


def _kernel_records(table: pd.DataFrame) -> list[dict]:
    records = []
    fields = KERNEL_FIELDS + (("short_name",) if "short_name" in table.columns else ())
    for row in table.to_dict("records"):
        records.append({field: _plain(row.get(field)) for field in fields})
    return records


def _plain(value):
    """numpy/pandas scalars -> int/float/str; missing (e.g. no Med in 2021 nsys) -> None."""
    if hasattr(value, "item"):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if isinstance(value, (int, float, str)) else str(value)


def _fraction(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _empty_phase() -> dict:
    return {"gpu_ns": 0, "kernels": 0, "by_class": {}, "wall_ns": 0, "busy_pct": None, "launch": None}


def _all_other(kernels: pd.DataFrame) -> dict:
    by_class = kernels.groupby("class")["total_ns"].sum().sort_values(ascending=False) if len(kernels) else {}
    return {**_empty_phase(), "gpu_ns": int(kernels["total_ns"].sum()),
            "kernels": int(kernels["instances"].sum()), "by_class": {str(c): int(v) for c, v in dict(by_class).items()}}
