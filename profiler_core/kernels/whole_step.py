"""The train step as one row of a kernel table: its phases' kernel time added up (json in, json out; no pandas, so
the app can use it on any stored analysis, also one written before this row existed)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sysprof.models.phases import PHASES

STEP_ROW = "step"  # forward + backward + optimizer; "other" (outside every phase range) is left out


def whole_step(phases: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """{gpu_ns, kernels, gemm_ns, gemm_fraction, by_class} summed over the phases that ran."""
    ran = [phases[p] for p in PHASES if (phases.get(p) or {}).get("kernels")]
    by_class: dict[str, int] = {}
    for stats in ran:
        for name, ns in (stats.get("by_class") or {}).items():
            by_class[name] = by_class.get(name, 0) + ns
    gpu_ns = sum(stats.get("gpu_ns") or 0 for stats in ran)
    gemm_ns = by_class.get("gemm", 0)
    return {"gpu_ns": gpu_ns, "kernels": sum(stats.get("kernels") or 0 for stats in ran), "gemm_ns": gemm_ns,
            "gemm_fraction": round(gemm_ns / gpu_ns, 4) if gpu_ns else 0.0, "by_class": by_class}
