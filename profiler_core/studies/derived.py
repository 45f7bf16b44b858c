"""Tables derived from sweep rows: warm-up, torch.compile and precision comparisons.

With the cells' summaries, each comparison also carries compare's verdict (per-process medians, two gates): a
speedup column alone says nothing about noise."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profiler_core.compare import compare_summaries


def verdict_cell(summary_a: Mapping[str, Any] | None, summary_b: Mapping[str, Any] | None, phase: str) -> str | None:
    """B against A on one phase: "faster [0.61–0.64]", "within noise", "noise unknown (1 process each)"."""
    if not summary_a or not summary_b:
        return None
    row = next((r for r in compare_summaries(summary_a, summary_b) if r["phase"] == phase), None)
    if row is None:
        return None
    interval = f" [{row['ci_low']:.2f}–{row['ci_high']:.2f}]" if row.get("ci_low") is not None else ""
    single = " (1 process each)" if row["n_a"] == row["n_b"] == 1 else ""
    return f"{row['verdict']}{interval}{single}"


def _summary_of(rows: list[dict], row: dict | None, summaries: list[dict | None] | None) -> dict | None:
    if row is None or summaries is None:
        return None
    return summaries[next(i for i, candidate in enumerate(rows) if candidate is row)]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def warmup_table(rows: list[dict]) -> list[dict]:
    """Per warm-up count: phase means ± std, the first measured step, and how far it sits from the mean."""
    table = []
    for row in rows:
        step_mean = row["step mean ms"]
        first = row["first step ms"]
        table.append({"warm-up steps": row["warmup"], "status": row["status"],
                      "fwd mean ms": _ms(row["fwd mean ms"]), "fwd std ms": _ms(row["fwd std ms"]),
                      "bwd mean ms": _ms(row["bwd mean ms"]), "bwd std ms": _ms(row["bwd std ms"]),
                      "step mean ms": _ms(step_mean), "step std ms": _ms(row["step std ms"]),
                      "first step ms": _ms(first),
                      "first / mean": round(first / step_mean, 2) if first and step_mean else None})
    return table


def _pair(rows: list[dict], key: str, match: dict) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


def compile_table(rows: list[dict], summaries: list[dict | None] | None = None) -> list[dict]:
    """Eager against compiled, forward and train step; with summaries, whether compiled is faster beyond noise."""
    table = []
    for mode, phase in (("forward", "fwd"), ("train", "step")):
        eager, compiled = _pair(rows, "mode", {"mode": mode, "compile": False}), _pair(rows, "mode", {"mode": mode, "compile": True})
        if not eager or not compiled:
            continue
        eager_ms, compiled_ms = eager[f"{phase} mean ms"], compiled[f"{phase} mean ms"]
        table.append({"model": eager["model"], "ctx": eager["ctx"], "measured": "forward" if mode == "forward" else "train step",
                      "eager ms": _ms(eager_ms), "eager std": _ms(eager[f"{phase} std ms"]),
                      "compiled ms": _ms(compiled_ms), "compiled std": _ms(compiled[f"{phase} std ms"]),
                      "speedup": round(eager_ms / compiled_ms, 2) if eager_ms and compiled_ms else None,
                      "compile s": _ms(compiled["compile s"]), "status": f"{eager['status']}/{compiled['status']}"})
        if summaries is not None:
            table[-1]["compiled vs eager"] = verdict_cell(_summary_of(rows, eager, summaries),
                                                          _summary_of(rows, compiled, summaries),
                                                          "forward" if mode == "forward" else "step")
    return table


def precision_table(rows: list[dict], summaries: list[dict | None] | None = None) -> list[dict]:
    """Per model: step time in strict fp32, TF32 and bf16 autocast, the speedups over strict fp32 and, with
    summaries, whether each is faster beyond noise."""
    table = []
    for model in dict.fromkeys(r["model"] for r in rows):
        fp32 = _pair(rows, "", {"model": model, "dtype": "fp32", "matmul_precision": "highest"})
        tf32 = _pair(rows, "", {"model": model, "dtype": "fp32", "matmul_precision": "high"})
        bf16 = _pair(rows, "", {"model": model, "dtype": "bf16"})
        base = fp32["step mean ms"] if fp32 else None
        entry = {"model": model}
        for label, row in (("fp32", fp32), ("tf32", tf32), ("bf16", bf16)):
            value = row["step mean ms"] if row else None
            entry[f"{label} step ms"] = _ms(value)
            entry[f"{label} speedup"] = round(base / value, 2) if base and value else None
            if summaries is not None and label != "fp32":
                entry[f"{label} vs fp32"] = verdict_cell(_summary_of(rows, fp32, summaries),
                                                         _summary_of(rows, row, summaries), "step")
        table.append(entry)
    return table
