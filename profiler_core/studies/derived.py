"""Tables derived from sweep rows: warm-up, torch.compile and precision comparisons."""
from __future__ import annotations


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


def compile_table(rows: list[dict]) -> list[dict]:
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
    return table


def precision_table(rows: list[dict]) -> list[dict]:
    """Per model: step time in strict fp32, TF32 and bf16 autocast, and the speedups over strict fp32."""
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
        table.append(entry)
    return table
