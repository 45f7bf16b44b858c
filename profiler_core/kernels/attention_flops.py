"""FLOPs of the naive attention's parts against their measured time: the reports' argument that the matmuls do
~4·d/5 times the softmax's FLOPs, yet the softmax takes a comparable time.

One owner for the FLOPs counts, used by the attention microbenchmark's table and by a profiled run's sub-range
table. Plain Python: the app reads these tables without pandas.
"""
from __future__ import annotations

from collections.abc import Mapping

from sysprof.models.phases import ATTENTION_SCORES as SCORES_RANGE


def attention_flops(matrices: int, seq: int, d: int) -> dict[str, int]:
    """FLOPs of one naive forward over `matrices` T×T score matrices (batch × heads), the masked half included
    (the eager version computes it): QKᵀ and PV 2·T²·d each per matrix; softmax 5 per score (max, subtract, exp,
    sum, divide); scale and mask 1 each per score. So the matmuls do 4d/5 times the softmax's FLOPs."""
    scores = matrices * seq * seq
    return {"matmul": 4 * scores * d, "softmax": 5 * scores, "scale_mask": 2 * scores}


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 2) if numerator is not None and denominator else None


def flops_time_rows(flops: Mapping[str, float], ms: Mapping[str, float | None]) -> list[dict]:
    """One row per part (matmul = QKᵀ + PV, softmax, scale+mask): GFLOP, ms, achieved TFLOP/s, and both against the
    softmax's. `flops` and `ms` cover the same calls (one forward, or every call of a profile)."""
    rows = []
    for part, label in (("matmul", "matmul (QKᵀ + PV)"), ("softmax", "softmax"), ("scale_mask", "scale + mask")):
        part_ms = ms.get(part)
        rows.append({"part": label, "GFLOP": round(flops[part] / 1e9, 3), "ms": part_ms,
                     "TFLOP/s": round(flops[part] / part_ms / 1e9, 2) if part_ms else None,
                     "FLOPs ÷ softmax": ratio(flops[part], flops["softmax"]),
                     "time ÷ softmax": ratio(part_ms, ms.get("softmax"))})
    return rows


def profiled_flops_rows(attention: Mapping, shape: Mapping[str, int] | None) -> list[dict]:
    """A profiled run's attention FLOPs table: kernel time of each part over every attention call of the profiled
    steps, FLOPs from the run's shape (batch, heads, ctx, d_head). Empty when the run has no naive attention
    ranges or no known shape (a model of your own)."""
    calls = attention.get("ranges") or 0
    if not shape or not calls or not attention.get("by_part"):
        return []
    per_call = attention_flops(shape["batch"] * shape["heads"], shape["ctx"], shape["d_head"])
    ms = {"matmul": attention.get("matmul_ns"), "softmax": attention.get("softmax_ns"),
          "scale_mask": attention.get("scale_mask_ns")}
    return flops_time_rows({part: flops * calls for part, flops in per_call.items()},
                           {part: None if ns is None else ns / 1e6 for part, ns in ms.items()})


def sub_range_rows(attention: Mapping) -> list[dict]:
    """Per attention sub-range of a profile: kernel time, its share of the attention ranges' kernel time, and ms per
    call. A profile made before scale and mask had a range of their own says so in its scores row."""
    total, calls = attention.get("gpu_ns") or 0, attention.get("ranges") or 0
    rows = []
    for part, ns in (attention.get("by_part") or {}).items():
        label = part if attention.get("mask_range", False) or part != SCORES_RANGE else f"{part} (with scale and mask)"
        rows.append({"sub-range": label, "kernel ms": round(ns / 1e6, 3),
                     "% of attention": round(100 * ns / total, 1) if total else None,
                     "µs per call": round(ns / calls / 1e3, 2) if calls else None})
    return rows
