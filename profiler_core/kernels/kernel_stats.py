"""Aggregations over attributed kernels: kernel tables, per-phase and per-step totals.

Everything returned by the `*_summary` functions is plain Python (int, float,
str, dict, list) so it goes straight into the analyze JSON.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sysprof.models.phases import (
    ATTENTION_MASK,
    ATTENTION_OUTPUT,
    ATTENTION_PARTS,
    ATTENTION_RANGE,
    ATTENTION_SCORES,
    ATTENTION_SOFTMAX,
    ATTRIBUTED_PHASES,
    PHASE_OF_RANGE,
    STEP_RANGE,
    attention_part_labels,
)
from sysprof.profiler_core.kernels.attribution import KernelAttribution
from sysprof.profiler_core.kernels.intervals import NO_RANGE
from sysprof.profiler_core.kernels.launch_bound import launch_figures
from sysprof.profiler_core.kernels.launch_verdict import judge

TOP_NON_GEMM = 5


def kernel_table(kernels: pd.DataFrame, names: pd.Series, by: list[str] | None = None,
                 short_names: pd.Series | None = None) -> pd.DataFrame:
    """Per kernel name (and `by` columns): instances and duration statistics in ns.

    Matches `nsys stats -r cuda_gpu_kern_sum` (sample standard deviation, ddof=1).
    With `short_names`, adds the short (undecorated) name nsys also stores.
    """
    keys = (by or []) + ["name_id"]
    grouped = kernels.groupby(keys, observed=True, sort=False)["duration"]
    table = grouped.agg(["size", "sum", "mean", "median", "min", "max", "std"]).reset_index()
    table.columns = keys + ["instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns"]
    table["std_ns"] = table["std_ns"].fillna(0.0)
    table["class"] = kernels.groupby("name_id", sort=False)["class"].first().reindex(table["name_id"]).to_numpy()
    table.insert(len(by or []), "name", names.reindex(table["name_id"]).to_numpy())
    if short_names is not None:
        short_id = kernels.groupby("name_id", sort=False)["short_id"].first().reindex(table["name_id"])
        table["short_name"] = short_names.reindex(short_id).to_numpy()
    return table.sort_values(keys[:-1] + ["total_ns"], ascending=[True] * (len(keys) - 1) + [False],
                             ignore_index=True)


def busy_union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of [start, end) intervals: GPU time with any kernel running."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    covered_until = np.maximum.accumulate(ends)
    previous_cover = np.concatenate(([starts[0]], covered_until[:-1]))
    # Each interval adds only the part past everything that started before it.
    return int(np.clip(ends - np.maximum(starts, previous_cover), 0, None).sum())


def phase_summaries(attribution: KernelAttribution) -> dict[str, dict]:
    """gpu_ns, kernels, by_class, wall_ns, busy_pct, launch, ... for each phase.

    busy_pct and launch (launch_bound.py, launch_verdict.py) are over the GPU span of the kernels each phase
    range launched; the 'other' phase, launched outside every phase range, has neither (None).
    """
    kernels, ranges = attribution.kernels, attribution.main_ranges
    wall = ranges.assign(phase=ranges["name"].map(PHASE_OF_RANGE)).dropna(subset=["phase"])
    steps = max(kernels.loc[kernels["step"] != NO_RANGE, "step"].nunique(), 1)
    launch = launch_figures(attribution)
    summaries = {}
    for phase in ATTRIBUTED_PHASES:
        in_phase = kernels[kernels["phase"] == phase]
        phase_wall = wall[wall["phase"] == phase]
        summaries[phase] = _phase_summary(in_phase, phase_wall, attribution.names, steps)
        summaries[phase]["launch_threads"] = _launch_threads(in_phase, attribution.thread_names)
        summaries[phase] |= _launch_fields(launch.get(phase), summaries[phase]["by_class"])
    return summaries


def _launch_fields(figures: dict | None, by_class: dict[str, int]) -> dict:
    if figures is None:
        return {"busy_pct": None, "launch": None}
    return {"busy_pct": figures["busy_pct"], "launch": figures | judge(figures, by_class)}


def _phase_summary(kernels: pd.DataFrame, wall: pd.DataFrame, names: pd.Series, steps: int) -> dict:
    gpu_ns = int(kernels["duration"].sum())
    union_ns = busy_union_ns(kernels["start"].to_numpy(), kernels["end"].to_numpy())
    wall_ns = int((wall["end"] - wall["start"]).sum())
    by_class = {str(c): int(ns) for c, ns in kernels.groupby("class", observed=True)["duration"].sum().items()}
    gemm_ns = by_class.get("gemm", 0)
    return {
        "gpu_ns": gpu_ns,
        "gpu_union_ns": union_ns,
        "kernels": int(len(kernels)),
        "by_class": dict(sorted(by_class.items(), key=lambda item: -item[1])),
        "wall_ns": wall_ns,
        "ranges": int(len(wall)),
        "busy_pct": None,  # over the GPU span, with `launch` (_launch_fields)
        "gemm_ns": gemm_ns,
        "gemm_fraction": round(gemm_ns / gpu_ns, 4) if gpu_ns else 0.0,
        "kernels_per_step": round(len(kernels) / steps, 2),
        "gpu_ns_per_step": round(gpu_ns / steps, 1),
        "top_non_gemm": _top_non_gemm(kernels, names),
    }


def _top_non_gemm(kernels: pd.DataFrame, names: pd.Series) -> list[dict]:
    others = kernels[kernels["class"] != "gemm"]
    if others.empty:
        return []
    table = kernel_table(others, names).head(TOP_NON_GEMM)
    return [{"name": str(row["name"]), "class": str(row["class"]), "instances": int(row["instances"]),
             "total_ns": int(row["total_ns"])} for row in table.to_dict("records")]


def _launch_threads(kernels: pd.DataFrame, thread_names: dict[int, str]) -> dict[str, int]:
    counts = kernels["launch_tid"].value_counts()
    return {thread_names.get(int(tid), str(tid) if tid != NO_RANGE else "unknown"): int(n)
            for tid, n in counts.items()}


def attention_summary(attribution: KernelAttribution) -> dict:
    """Kernel time inside `scaled dot product attention`, per sub-range found in the profile, and the reports'
    softmax-vs-matmul split: matmul is the GEMM kernels of the scores and final-matmul ranges (so scale and mask
    never count as matmul, in profiles made before they had a range of their own too)."""
    kernels, ranges = attribution.kernels, attribution.main_ranges
    inside = kernels[kernels["in_attention"]]
    found = set(ranges["name"])
    by_part = {part: int(inside.loc[inside["attention_part"] == part, "duration"].sum())
               for part in ATTENTION_PARTS if part in found}
    gemm = inside["class"] == "gemm"
    matmul_ns = int(inside.loc[gemm & inside["attention_part"].isin([ATTENTION_SCORES, ATTENTION_OUTPUT]),
                               "duration"].sum())
    scores_extra_ns = int(inside.loc[~gemm & (inside["attention_part"] == ATTENTION_SCORES), "duration"].sum())
    softmax_ns = by_part.get(ATTENTION_SOFTMAX, 0)
    gpu_ns = int(inside["duration"].sum())
    return {
        "ranges": int((ranges["name"] == ATTENTION_RANGE).sum()),
        "gpu_ns": gpu_ns,
        "kernels": int(len(inside)),
        "by_part": by_part,
        "mask_range": ATTENTION_MASK in found,  # False: an older profile, scale and mask inside the scores range
        "by_class": {str(c): int(ns) for c, ns in inside.groupby("class", observed=True)["duration"].sum().items()},
        "softmax_ns": softmax_ns,
        "matmul_ns": matmul_ns,
        "scale_mask_ns": by_part.get(ATTENTION_MASK, 0) + scores_extra_ns,
        "softmax_fraction": round(softmax_ns / gpu_ns, 4) if gpu_ns else 0.0,
    }


def attention_kernel_table(attribution: KernelAttribution) -> pd.DataFrame:
    """Kernel table per attention sub-range, the part's label where a phase would stand (see phase_kernel_table)."""
    kernels = attribution.kernels
    inside = kernels[kernels["in_attention"] & (kernels["attention_part"] != "")]
    table = kernel_table(inside, attribution.names, by=["attention_part"])
    labels = attention_part_labels(mask_range=bool((attribution.main_ranges["name"] == ATTENTION_MASK).any()))
    table = table.rename(columns={"attention_part": "phase"})
    table["phase"] = table["phase"].astype(str).map(labels)
    part_totals = table.groupby("phase")["total_ns"].transform("sum")
    table["pct_of_phase"] = (100.0 * table["total_ns"] / part_totals).round(2)
    return table


def step_summaries(attribution: KernelAttribution) -> list[dict]:
    """Per `step N`: wall time of the range, kernel count and GPU time split by phase."""
    kernels = attribution.kernels[attribution.kernels["step"] != NO_RANGE]
    ranges = attribution.main_ranges
    step_ranges = ranges[ranges["name"].str.match(STEP_RANGE)]
    wall_by_step = dict(zip(step_ranges["name"].str.extract(STEP_RANGE)[0].astype(int),
                            step_ranges["end"] - step_ranges["start"]))
    per_phase = kernels.groupby(["step", "phase"], observed=True)["duration"].sum()
    steps = []
    for step, in_step in kernels.groupby("step"):
        steps.append({
            "step": int(step),
            "wall_ns": int(wall_by_step.get(step, 0)),
            "kernels": int(len(in_step)),
            "gpu_ns": int(in_step["duration"].sum()),
            "phase_gpu_ns": {str(p): int(ns) for p, ns in per_phase.loc[step].items()},
        })
    return steps
