"""Kernel tables across the cells of a profiled sweep (`sweep --profiler nsys`): what the reports set side by side
per size × ctx. Each cell's own analysis (kernels/analysis.json, kernels/phase_kernels.csv) is read as it is; a
cell without one (not profiled, out of memory, failed) is a row with its status and no numbers. Rows are keyed by
model, ctx, mode and every other field the cells vary (dtype, compile, attention, …): two cells never print as
identical-looking rows."""
from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from sysprof.models.phases import PHASES
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.documents.run_document import KERNELS, Run
from sysprof.profiler_core.kernels.whole_step import whole_step

NS_PER_MS = 1e6
KEY_FIELDS = ("model", "ctx", "mode")  # every row names these; the fields the cells vary come after
# A row's "device" is the GPU's name once the cell ran (the config's "cuda" before): not a field the cells vary.
NOT_KEYS = ("device",)


def varied_fields(rows: list[dict]) -> list[str]:
    """The config fields whose value differs between the cells (a study's plan may not list them all: the advisor
    extends its sweep with cells that change other fields)."""
    return [f.name for f in dataclasses.fields(RunConfig)
            if f.name not in NOT_KEYS and len({repr(row.get(f.name)) for row in rows}) > 1]


def row_keys(rows: list[dict]) -> list[str]:
    """model, ctx, mode, then every other config field whose value differs between the cells."""
    return [*KEY_FIELDS, *(name for name in varied_fields(rows) if name not in KEY_FIELDS)]


def keyed(row: dict, keys: Sequence[str]) -> dict:
    return {key: row.get(key) for key in keys}


def _phase_kernels(run_dir: Path | None) -> list[dict]:
    """kernels/phase_kernels.csv: one row per (phase, kernel) with its total_ns and share of the phase."""
    if run_dir is None:
        return []
    try:
        with (run_dir / rundir.KERNELS_DIR / rundir.PHASE_KERNELS).open(newline="") as handle:
            return [row | {"total_ns": int(row["total_ns"])} for row in csv.DictReader(handle)]
    except (OSError, KeyError, ValueError, csv.Error):
        return []


def _top_by_phase(run_dir: Path) -> dict[str, dict]:
    """The kernel with the most time in each phase."""
    top: dict[str, dict] = {}
    for row in _phase_kernels(run_dir):
        if row["phase"] not in top or row["total_ns"] > top[row["phase"]]["total_ns"]:
            top[row["phase"]] = row
    return top


def _top_non_gemm(run_dir: Path | None) -> dict | None:
    """The non-GEMM kernel with the most time over forward, backward and optimizer together."""
    totals: dict[tuple[str, str], int] = {}
    for row in _phase_kernels(run_dir):
        if row["phase"] in PHASES and row["class"] != "gemm":
            key = (row["name"], row["class"])
            totals[key] = totals.get(key, 0) + row["total_ns"]
    if not totals:
        return None
    (name, kind), total = max(totals.items(), key=lambda item: item[1])
    return {"name": name, "class": kind, "total_ns": total}


def _per_step_ms(ns: float | None, analysis: dict) -> float | None:
    steps = len(analysis.get("steps") or []) or 1
    return None if ns is None else round(ns / steps / NS_PER_MS, 3)


def _cells(rows: list[dict], runs: Sequence[Run | None]) -> list[tuple[dict, Path | None, dict | None]]:
    keys = row_keys(rows)
    return [(keyed(row, keys) | {"status": row["status"]}, run.path if run else None,
             run.analysis(KERNELS) if run else None) for row, run in zip(rows, runs)]


def top_kernel_rows(cells) -> list[dict]:
    """Per cell and pass (forward, backward, optimizer): its top kernel, ms per step and share of the pass."""
    table = []
    for row, path, analysis in cells:
        top = _top_by_phase(path) if analysis and path else {}
        for phase in PHASES:
            kernel = top.get(phase)
            if analysis and not kernel:
                continue  # the mode did not run this pass
            table.append(row | {"pass": phase, "kernel": kernel["name"] if kernel else None,
                          "class": kernel["class"] if kernel else None,
                          "ms/step": _per_step_ms(kernel["total_ns"], analysis) if kernel and analysis else None,
                          "% of pass": float(kernel["pct_of_phase"]) if kernel else None})
    return table


def top_non_gemm_rows(cells) -> list[dict]:
    """Per cell: the non-GEMM kernel with the most time over the whole step."""
    table = []
    for row, path, analysis in cells:
        best = _top_non_gemm(path) if analysis else None
        table.append(row | {"kernel": best["name"] if best else None, "class": best["class"] if best else None,
                      "ms/step": _per_step_ms(best["total_ns"], analysis) if best and analysis else None})
    return table


def top_non_gemm_forward_rows(cells) -> list[dict]:
    """Per cell: the non-GEMM kernel with the most time in the forward, its share of the forward's kernel time and
    how many times one forward launches it (what the reports tabulate for inference)."""
    table = []
    for row, path, analysis in cells:
        forward = [k for k in _phase_kernels(path) if k["phase"] == "forward" and k["class"] != "gemm"] \
            if analysis else []
        best = max(forward, key=lambda k: k["total_ns"], default=None)
        forwards = len((analysis or {}).get("steps") or []) or 1
        table.append(row | {"kernel": best["name"] if best else None, "class": best["class"] if best else None,
                            "ms/forward": _per_step_ms(best["total_ns"], analysis) if best and analysis else None,
                            "% of forward": float(best["pct_of_phase"]) if best else None,
                            "instances/forward": round(int(best["instances"]) / forwards, 1) if best else None})
    return table


def inference_column_rows(top: list[dict]) -> list[dict]:
    """The top kernel per pass with the inference forward (a mode-forward cell) as a column beside the train
    step's passes, one row per cell of the train mode: what a sweep over --mode forward,train sets side by side."""
    def identity(row: dict) -> dict:
        return {k: v for k, v in row.items() if k not in ("mode", "pass", "status", "kernel", "class", "ms/step",
                                                          "% of pass")}
    inference = [row for row in top if row.get("mode") == "forward" and row["pass"] == "forward"]
    table = []
    for row in (r for r in top if r.get("mode") == "train" and r["pass"] == "forward"):
        twin = next((r for r in inference if identity(r) == identity(row)), None)
        if twin is None:
            continue
        passes = [r for r in top if identity(r) == identity(row) and r.get("mode") == "train"]
        table.append(identity(row) | {"inference forward": _kernel_cell(twin)}
                     | {f"train {r['pass']}": _kernel_cell(r) for r in passes})
    return table


def _kernel_cell(row: dict) -> str | None:
    if row["kernel"] is None:
        return row["status"] if row["status"] != "ok" else None
    return f"{row['kernel']} ({row['% of pass']:.0f}%)"


def gemm_fraction_rows(cells) -> list[dict]:
    """Per cell: the GEMM share of forward (what inference runs) against the whole train step's. A forward-only
    cell has no backward or step share (its analysis lists an empty backward phase: 0, not a share)."""
    table = []
    for row, _, analysis in cells:
        fractions = (analysis or {}).get("gemm_fraction") or {}
        step = whole_step(analysis["phases"])["gemm_fraction"] if analysis else None
        has_backward = row.get("mode") != "forward"
        table.append(row | {"forward GEMM %": _pct(fractions.get("forward")) if analysis else None,
                      "backward GEMM %": _pct(fractions.get("backward")) if has_backward and "backward" in fractions
                      else None,
                      "step GEMM %": _pct(step) if analysis and has_backward else None})
    return table


def softmax_matmul_rows(cells) -> list[dict]:
    """Per cell: softmax against matmul (GEMM) kernel time inside the attention ranges, scale and mask apart, and
    the matmuls' FLOPs against the softmax's where the cell's analysis has them (naive attention only)."""
    table = []
    for row, _, analysis in cells:
        attention = (analysis or {}).get("attention") or {}
        flops: dict = next((r for r in attention.get("flops") or [] if r["part"].startswith("matmul")), {})
        softmax, matmul = attention.get("softmax_ns"), attention.get("matmul_ns")
        table.append(row | {"softmax ms/step": _attention_ms(analysis, "softmax_ns"),
                      "matmul ms/step": _attention_ms(analysis, "matmul_ns"),
                      "scale+mask ms/step": _attention_ms(analysis, "scale_mask_ns"),
                      "matmul / softmax time": round(matmul / softmax, 2) if softmax and matmul is not None else None,
                      "matmul / softmax FLOPs": flops.get("FLOPs ÷ softmax")})
    return table


def _attention_ms(analysis: dict | None, key: str) -> float | None:
    """None where the profile has no attention ranges (a compiled model's graph drops them): not 0 ms."""
    attention = (analysis or {}).get("attention") or {}
    value = attention.get(key)
    return _per_step_ms(value, analysis) if analysis and attention.get("ranges") and value is not None else None


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else round(fraction * 100, 1)


def profiled_sweep_tables(rows: list[dict], runs: Sequence[Run | None]) -> dict[str, list[dict]]:
    """The cross-cell kernel tables, when at least one cell has a kernel analysis (else none)."""
    cells = _cells(rows, runs)
    if not any(analysis for _, _, analysis in cells):
        return {}
    top = top_kernel_rows(cells)
    tables = {"top kernel per pass (profiled pass)": top,
              **({INFERENCE_TABLE: inference} if (inference := inference_column_rows(top)) else {}),
              "top non-GEMM kernel per cell": top_non_gemm_rows(cells),
              "top non-GEMM kernel of the forward": top_non_gemm_forward_rows(cells),
              "GEMM % of GPU time: forward (inference) vs the train step": gemm_fraction_rows(cells)}
    softmax = softmax_matmul_rows(cells)
    if any(r["softmax ms/step"] is not None for r in softmax):
        tables["attention: softmax vs matmul kernel time"] = softmax
        by_dtype = attention_dtype_rows(softmax)
        if by_dtype:
            tables["attention kernel time: fp32 vs autocast (speed-up = fp32 ÷ autocast)"] = by_dtype
    return tables


INFERENCE_TABLE = "top kernel per pass: the inference forward beside the train step's passes (% of the pass)"


def attention_dtype_rows(softmax: list[dict]) -> list[dict]:
    """Each autocast cell's attention kernel time against the fp32 cell that differs from it only in dtype."""
    def identity(row: dict) -> dict:  # what names the cell, but its dtype
        return {key: value for key, value in row.items() if key not in (*_MEASURED, "dtype", "status")}

    fp32 = [row for row in softmax if row.get("dtype") == "fp32"]
    table = []
    for row in softmax:
        base = next((r for r in fp32 if identity(r) == identity(row)), None) if row.get("dtype") != "fp32" else None
        if base is None or row.get("dtype") is None:
            continue
        out = identity(row) | {"autocast": row["dtype"],
                               "status": base["status"] if base["status"] != "ok" else row["status"]}
        for part in ("softmax", "matmul", "scale+mask"):
            before, after = base[f"{part} ms/step"], row[f"{part} ms/step"]
            out |= {f"{part} fp32 ms": before, f"{part} autocast ms": after,
                    f"{part} speed-up": round(before / after, 2) if before and after else None}
        table.append(out)
    return table


_MEASURED = ("softmax ms/step", "matmul ms/step", "scale+mask ms/step", "matmul / softmax time",
             "matmul / softmax FLOPs")
