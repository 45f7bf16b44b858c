"""The analyze JSON's `modules` section (runs with `--nvtx-modules`): GPU time per phase and module type, the user's
own ranges as sub-rows of their module type, and the modules that took the most GPU time.

    {"ranges": n, "steps": s, "rows": [{"phase", "category", "sub_range" (null: the category's own row, which
     includes its sub-rows), "gpu_ns", "kernels", "share" (of the phase's GPU time)}],
     "top_modules": [{"module", "category", "gpu_ns", "kernels", "forward_ns", "backward_ns"}], "notes": [...]}

Without module ranges the section says so in one note and has no rows.
"""
from __future__ import annotations

import pandas as pd

from sysprof.models.phases import ATTRIBUTED_PHASES, BACKWARD, FORWARD
from sysprof.profiler_core.base.module_types import CATEGORIES, NO_MODULE
from sysprof.profiler_core.kernels.attribution import KernelAttribution
from sysprof.profiler_core.kernels.intervals import NO_RANGE

TOP_MODULES = 15
ROW_CATEGORIES = (*CATEGORIES, NO_MODULE)
ABSENT_NOTE = "no module ranges: run with --nvtx-modules N"


def module_summary(attribution: KernelAttribution) -> dict:
    kernels = attribution.kernels
    if not attribution.module_ranges or "module_category" not in kernels:
        return {"ranges": 0, "rows": [], "top_modules": [], "notes": [ABSENT_NOTE]}
    return {"ranges": attribution.module_ranges,
            "steps": max(kernels.loc[kernels["step"] != NO_RANGE, "step"].nunique(), 1),
            "rows": category_rows(kernels), "top_modules": top_modules(kernels), "notes": _notes(kernels)}


def category_rows(kernels: pd.DataFrame) -> list[dict]:
    """Per phase, a row per module type in CATEGORIES order, each followed by its user ranges, largest first."""
    phase_ns = kernels.groupby("phase", observed=True)["duration"].sum()
    by_category = _totals(kernels, ["phase", "module_category"])
    by_range = _totals(kernels[kernels["sub_range"] != ""], ["phase", "module_category", "sub_range"])
    rows = []
    for (phase, category), (gpu_ns, count) in sorted(by_category.items(), key=lambda item: _order(*item[0])):
        rows.append(_row(phase, category, None, gpu_ns, count, phase_ns[phase]))
        mine = [(key[2], value) for key, value in by_range.items() if key[:2] == (phase, category)]
        for sub_range, (ns, n) in sorted(mine, key=lambda item: -item[1][0]):
            rows.append(_row(phase, category, sub_range, ns, n, phase_ns[phase]))
    return rows


def top_modules(kernels: pd.DataFrame, limit: int = TOP_MODULES) -> list[dict]:
    """The innermost hooked modules by GPU time, with their forward and backward parts."""
    inside = kernels[kernels["module"] != ""]
    per_phase = inside.groupby(["module", "phase"], observed=True)["duration"].sum()
    totals = inside.groupby("module", observed=True).agg(gpu_ns=("duration", "sum"), kernels=("duration", "size"),
                                                         category=("module_category", "first"))
    rows = []
    for module, total in totals.sort_values("gpu_ns", ascending=False).head(limit).iterrows():
        rows.append({"module": str(module), "category": str(total["category"]), "gpu_ns": int(total["gpu_ns"]),
                     "kernels": int(total["kernels"]), "forward_ns": int(per_phase.get((module, FORWARD), 0)),
                     "backward_ns": int(per_phase.get((module, BACKWARD), 0))})
    return rows


def _totals(kernels: pd.DataFrame, keys: list[str]) -> dict[tuple, tuple[int, int]]:
    grouped = kernels.groupby(keys, observed=True)["duration"].agg(["sum", "size"])
    return {tuple(str(k) for k in key): (int(row["sum"]), int(row["size"])) for key, row in grouped.iterrows()}


def _order(phase: str, category: str) -> tuple[int, int]:
    return ATTRIBUTED_PHASES.index(phase), ROW_CATEGORIES.index(category)


def _row(phase: str, category: str, sub_range: str | None, gpu_ns: int, count: int, phase_ns: int) -> dict:
    return {"phase": phase, "category": category, "sub_range": sub_range, "gpu_ns": gpu_ns, "kernels": count,
            "share": round(gpu_ns / phase_ns, 4) if phase_ns else 0.0}


def _notes(kernels: pd.DataFrame) -> list[str]:
    notes = ["kernels take the innermost module range on the thread that launched them (backward: the autograd "
             "thread); a module's type is that of the deepest module on its path that has one"]
    backward = kernels[kernels["phase"] == BACKWARD]
    if len(backward) and (backward["module"] == "").all():
        notes.append("no module range holds a backward kernel: the profile lacks the autograd thread's ranges")
    return notes
