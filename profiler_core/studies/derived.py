"""Tables derived from sweep rows: warm-up, torch.compile and precision comparisons.

With the cells' summaries, each comparison also carries compare's verdict (per-process medians, two gates): a
speedup column alone says nothing about noise."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sysprof.profiler_core.analysis.compare import compare_summaries


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


MODE_MEASURES = {"forward": "fwd", "forward_backward": "fwd+bwd", "train": "step"}  # what each mode is timed by
DIM_COLUMNS = ("params", "d_model", "d_ff", "layers", "heads")


def _groups(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(k) for k in keys), []).append(row)
    return groups


def _model_columns(row: dict) -> dict:
    return {"model": row["model"], **{c: row.get(c) for c in DIM_COLUMNS}, "ctx": row["ctx"]}


def warmup_table(rows: list[dict]) -> list[dict]:
    """Per model × ctx × warm-up count, each mode side by side (FWD, FWD+BWD, train step): its status, mean ± std,
    how far the first measured step sits from the mean, the warm-up time and the cell's total time."""
    table = []
    for _, group in _groups(rows, ("model", "ctx", "batch", "warmup")).items():
        entry = _model_columns(group[0]) | {"warm-up steps": group[0]["warmup"]}
        for row in group:
            label = MODE_MEASURES.get(row.get("mode") or "train", "step")
            mean, first = row[f"{label} mean ms"], row["first step ms"]
            entry |= {f"{label} status": row["status"], f"{label} mean ms": _ms(mean),
                      f"{label} std ms": _ms(row[f"{label} std ms"]),
                      f"{label} first / mean": round(first / mean, 2) if first and mean else None,
                      f"{label} warm-up s": _ms(row.get("warm-up s")), f"{label} total s": _ms(row.get("total s"))}
        table.append(entry)
    return table


def _pair(rows: list[dict], match: dict) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


COMPILE_MEASURES = (("forward", "fwd", "forward", "forward"), ("train", "step", "train step", "step"),
                    ("train", "bwd+opt", "backward+optimizer", None))


def compile_table(rows: list[dict], summaries: list[dict | None] | None = None) -> list[dict]:
    """Eager against compiled per model × ctx: the forward, the train step and its backward+optimizer, each side's
    peak memory (CUDA only; empty elsewhere); with summaries, whether compiled is faster beyond noise (a summed
    phase has no per-process record: no verdict)."""
    table = []
    for _, group in _groups(rows, ("model", "ctx", "batch")).items():
        for mode, label, measured, phase in COMPILE_MEASURES:
            eager, compiled = (_pair(group, {"mode": mode, "compile": flag}) for flag in (False, True))
            if not eager or not compiled or eager[f"{label} mean ms"] is None and eager["status"] == "ok":
                continue
            eager_ms, compiled_ms = eager[f"{label} mean ms"], compiled[f"{label} mean ms"]
            table.append({**_model_columns(eager), "measured": measured,
                          "eager ms": _ms(eager_ms), "eager std": _ms(eager[f"{label} std ms"]),
                          "compiled ms": _ms(compiled_ms), "compiled std": _ms(compiled[f"{label} std ms"]),
                          "speedup": round(eager_ms / compiled_ms, 2) if eager_ms and compiled_ms else None,
                          "compile s": _ms(compiled["compile s"]),
                          # the peak of the cell that ran this mode: a train row and its backward+optimizer share it
                          "eager peak GiB": _ms(eager.get("peak GiB")),
                          "compiled peak GiB": _ms(compiled.get("peak GiB")),
                          "status": f"{eager['status']}/{compiled['status']}"})
            if summaries is not None:
                table[-1]["compiled vs eager"] = verdict_cell(_summary_of(rows, eager, summaries),
                                                              _summary_of(rows, compiled, summaries),
                                                              phase) if phase else None
    return table


PRECISION_VARIANTS = (("fp32", {"dtype": "fp32", "matmul_precision": "highest"}),
                      ("tf32", {"dtype": "fp32", "matmul_precision": "high"}), ("bf16", {"dtype": "bf16"}))
PRECISION_MEASURES = (("fwd", "forward", "forward"), ("fwd+bwd", "forward+backward", "forward+backward"),
                      ("step", "train step", "step"))


def precision_table(rows: list[dict], summaries: list[dict | None] | None = None) -> list[dict]:
    """Per model × ctx and per measured part (forward, forward+backward, train step, as the mode ran them): strict
    fp32, TF32 and bf16 autocast, mean and median; speedups over strict fp32 from the medians and, with summaries,
    whether each is faster beyond noise. TF32 is a CUDA matmul mode: off CUDA its column is left out."""
    table = []
    tf32 = any(row.get("device type") == "cuda" for row in rows)
    for _, group in _groups(rows, ("model", "ctx", "batch", "mode")).items():
        cells = {name: _pair(group, match) for name, match in PRECISION_VARIANTS if name != "tf32" or tf32}
        for label, measured, phase in PRECISION_MEASURES:
            if not any(row and row[f"{label} mean ms"] is not None for row in cells.values()):
                continue
            if label == "step" and group[0].get("mode") != "train":
                continue  # a forward or forward+backward cell's step is that pass again, not a train step
            entry = _model_columns(group[0]) | {"params": next((r["params"] for r in cells.values() if r), None),
                                                "mode": group[0].get("mode"), "measured": measured}
            base = (cells["fp32"] or {}).get(f"{label} median ms")
            for name, row in cells.items():
                median = (row or {}).get(f"{label} median ms")
                entry[f"{name} mean ms"] = _ms((row or {}).get(f"{label} mean ms"))
                entry[f"{name} median ms"] = _ms(median)
                entry[f"{name} speedup"] = round(base / median, 2) if base and median else None
                entry[f"{name} tokens/s"] = _tokens_per_s(group[0], median)
                if summaries is not None and name != "fp32":
                    entry[f"{name} vs fp32"] = verdict_cell(_summary_of(rows, cells["fp32"], summaries),
                                                            _summary_of(rows, row, summaries), phase)
            table.append(entry)
    return table


def _tokens_per_s(row: dict, median_ms: float | None) -> float | None:
    """Throughput of one measured part (batch × ctx tokens per median time): the forward's and the train step's
    tokens/s side by side for each precision."""
    if not median_ms or not row.get("batch") or not row.get("ctx"):
        return None
    return round(row["batch"] * row["ctx"] * 1000 / median_ms, 1)


def passes_table(rows: list[dict]) -> list[dict]:
    """Forward against forward+backward per model × ctx, from the same steps of a forward_backward run (each step's
    sum, not a sum of medians), with the Ratio of their medians."""
    table = []
    for row in rows:
        forward, both = row["fwd median ms"], row["fwd+bwd median ms"]
        table.append({**_model_columns(row), "status": row["status"], "fwd mean ms": _ms(row["fwd mean ms"]),
                      "fwd std ms": _ms(row["fwd std ms"]), "fwd median ms": _ms(forward),
                      "fwd+bwd mean ms": _ms(row["fwd+bwd mean ms"]), "fwd+bwd std ms": _ms(row["fwd+bwd std ms"]),
                      "fwd+bwd median ms": _ms(both),
                      "ratio fwd+bwd / fwd": round(both / forward, 2) if both and forward else None})
    return table


def precision_memory_table(rows: list[dict]) -> list[dict]:
    """Peak memory per model × ctx × mode, strict fp32 against bf16 autocast, allocated and reserved, with Δ and
    % (CUDA only: empty where no cell measured a peak)."""
    table = []
    for _, group in _groups(rows, ("model", "ctx", "batch", "mode")).items():
        fp32, bf16 = (_pair(group, match) for _, match in (PRECISION_VARIANTS[0], PRECISION_VARIANTS[2]))
        if not fp32 or not bf16 or (fp32["peak GiB"] is None and bf16["peak GiB"] is None):
            continue
        entry = _model_columns(fp32) | {"mode": fp32.get("mode"), "status": f"{fp32['status']}/{bf16['status']}"}
        for label, column in (("allocated", "peak GiB"), ("reserved", "peak reserved GiB")):
            a, b = fp32.get(column), bf16.get(column)
            entry |= {f"fp32 {label} GiB": _ms(a), f"bf16 {label} GiB": _ms(b),
                      f"Δ {label} GiB": _ms(b - a) if a is not None and b is not None else None,
                      f"Δ {label} %": round((b - a) / a * 100, 1) if a and b is not None else None}
        table.append(entry)
    return table
