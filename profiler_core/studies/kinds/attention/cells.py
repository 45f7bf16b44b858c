"""Driver of the attention microbenchmark: cells grouped into runner processes, a fresh one after each OOM."""
from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.code_specs import COMPILED_PREFIX, name_problem, target_problem
from sysprof.profiler_core.base.config import DTYPE_BYTES, ConfigError
from sysprof.profiler_core.base.nvml import driver_version, gpu_name
from sysprof.profiler_core.base.processes import torch_module
from sysprof.profiler_core.base.units import format_bytes
from sysprof.profiler_core.kernels.attention_flops import attention_flops, ratio

DTYPES = ("fp32", "bf16")  # bf16: autocast over fp32 inputs, as users run it (studies before it cast Q, K, V)
DEVICES = ("cuda", "cpu", "mps")
# Without --impl/--d/--seq/--iters: the handout's grid on a GPU; on a CPU a grid that finishes in a minute or two,
# without torch.compile (inductor needs a C++ compiler there and compiles every shape for tens of seconds).
DEFAULT_GRID = {"cuda": ("eager,compiled,sdpa", "16,32,64,128", "256,1024,4096,8192,16384", "100"),
                "mps": ("eager,compiled,sdpa", "16,32,64,128", "256,1024,4096", "20"),
                "cpu": ("eager,sdpa", "16,64", "128,512", "10")}


BUILT_IN = ("eager", "compiled", "sdpa")


def implementations(text: str) -> list[str]:
    """--impl's items: the built-in implementations, and the user's attention functions (q, k, v[, mask] →
    output) as `file.py:fn` or `module:fn`, `compiled:` before one to torch.compile it. The code is located here,
    not imported (the benchmark's process imports it); ConfigError with the reason."""
    chosen = list(dict.fromkeys(item.strip() for item in text.split(",") if item.strip()))
    if not chosen:
        raise ConfigError(f"--impl: no value (choose from {', '.join(BUILT_IN)}, or file.py:fn / module:fn)")
    for item in chosen:
        if item in BUILT_IN:
            continue
        target, _, name = item.removeprefix(COMPILED_PREFIX).rpartition(":")
        if not target or not name.isidentifier():
            raise ConfigError(f"--impl: {item!r} is neither {', '.join(BUILT_IN)} nor your function as file.py:fn "
                              f"or module:fn ({COMPILED_PREFIX}file.py:fn compiles it)")
        problem = target_problem("--impl", target) or name_problem("--impl", target, name)
        if problem:
            raise ConfigError(problem)
    return chosen


def grid(impls: list[str], dims: list[int], seqs: list[int], dtypes: list[str]) -> list[list[dict]]:
    """One group per (implementation, dtype, d), sequence lengths ascending: OOMs come at the end of a group."""
    return [[{"impl": impl, "dtype": dtype, "d": d, "seq": seq} for seq in sorted(seqs)]
            for impl in impls for dtype in dtypes for d in dims]


def certain_bytes(cell: dict, batch: int) -> int:
    """Bytes a cell cannot run without: Q, K, V and the output (fp32 inputs), and for eager attention one score
    matrix (in the autocast dtype under bf16). SDPA and compiled attention may never hold the scores, so they are
    not counted for them, nor for the user's own; the real peak is higher, which makes a refusal certain."""
    vectors = 4 * batch * cell["seq"] * cell["d"] * DTYPE_BYTES["fp32"]
    scores = batch * cell["seq"] ** 2 * DTYPE_BYTES[cell["dtype"]] if cell["impl"] == "eager" else 0
    return vectors + scores


def fit_problem(groups: list[list[dict]], batch: int, limit: tuple[int, str] | None) -> str | None:
    """The first cell that cannot fit in the device's memory whatever the implementation does, in one line."""
    if limit is None:
        return None
    for cell in (cell for group in groups for cell in group):
        needed = certain_bytes(cell, batch)
        if needed > limit[0]:
            return (f"{cell['impl']} {cell['dtype']} d={cell['d']} seq={cell['seq']} at batch {batch} needs at least "
                    f"{format_bytes(needed)}, more than {limit[1]} ({format_bytes(limit[0])}): lower --seq or --batch "
                    "(--force runs it anyway)")
    return None


def bench_argv(cells: list[dict], batch: int, iters: int, dtype: str, device: str) -> list[str]:
    return [*torch_module("sysprof.profiler_core.runner.attention_bench"), "--cells-json", json.dumps(cells),
            "--batch", str(batch), "--iters", str(iters), "--dtype", dtype, "--device", device]


def device_problem(device: str) -> str | None:
    """Asked of the benchmark itself (this process does not import torch): why it cannot run there, or None."""
    if device == "cpu":
        return None
    done = subprocess.run(bench_argv([], 1, 1, "fp32", device), capture_output=True, text=True)
    found = events.decode_lines(done.stdout, (events.FAILED,))
    if found:
        return found[0]["message"]
    return None if done.returncode == 0 else f"the benchmark could not start ({done.stderr.strip()[-200:]})"


def run_group(cells: list[dict], batch: int, iters: int, device: str, log: Path) -> list[dict]:
    """Every cell of the group gets a result; after an OOM or a failure the rest run in a new process."""
    results: list[dict] = []
    while len(results) < len(cells):
        remaining, before = cells[len(results):], len(results)
        with log.open("ab") as stderr:
            done = subprocess.run(bench_argv(remaining, batch, iters, remaining[0]["dtype"], device),
                                  stdout=subprocess.PIPE, stderr=stderr, text=True)
        found = events.decode_lines(done.stdout, (events.CELL_RESULT, events.FAILED))
        results += [{k: v for k, v in e.items() if k != "event"} for e in found if e["event"] == events.CELL_RESULT]
        failure = next((e for e in found if e["event"] == events.FAILED), None)
        if failure or done.returncode not in (0, 3) or len(results) == before:  # the next cell failed
            reason = failure["message"] if failure else f"benchmark process exited with {done.returncode}"
            if len(results) < len(cells):
                results.append(cells[len(results)] | {"status": events.FAILED_STATUS, "message": reason})
    return results


def write_plan(study_dir: Path, groups: list[list[dict]], batch: int, iters: int, device: str) -> None:
    """What the study will measure: enough to rebuild its tables from cells.jsonl, also half-way."""
    cells = [c for g in groups for c in g]
    rundir.write_json(study_dir / rundir.ATTENTION_PLAN, {
        "study": "attention", "batch": batch, "iters": iters, "device": device, "precision": "autocast",
        "dtypes": list(dict.fromkeys(c["dtype"] for c in cells)), "cells": cells, "created": time.time(),
        "command": rundir.typed_command(), "machine": _machine(device)})


def _machine(device: str) -> dict:
    """The GPU the benchmark runs on, from NVML (the driver imports no torch): on a homogeneous node the first
    visible GPU's name is every GPU's; none for a CPU or MPS study."""
    return {"gpu": gpu_name(), "driver_version": driver_version()} if device in ("cuda", "auto") else {}


def run_study(study_dir: Path, groups: list[list[dict]], batch: int, iters: int, device: str,
              on_cell: Callable[[dict], None]) -> list[dict]:
    write_plan(study_dir, groups, batch, iters, device)
    rows = []
    for group in groups:
        for result in run_group(group, batch, iters, device, study_dir / rundir.STDERR):
            row = summarize_cell(result, batch, result["dtype"])
            rundir.append_jsonl(study_dir / rundir.ATTENTION_CELLS, result)
            on_cell(row)
            rows.append(row)
    return rows


def _mib(value: int | None) -> float | None:
    return value / 2**20 if value is not None else None


def _mean_std(times: list[float] | None) -> tuple[float | None, float | None]:
    if not times:
        return None, None
    return statistics.fmean(times), statistics.stdev(times) if len(times) > 1 else 0.0


def summarize_cell(result: dict, batch: int, dtype: str) -> dict:
    """A table row: mean ± std times, the memory around forward and backward (None where the device's allocator
    does not tell), and the saved memory in units of one (B, T, T) tensor of the dtype."""
    square_bytes = batch * result["seq"] ** 2 * DTYPE_BYTES[dtype]
    row = {"impl": result["impl"], "dtype": dtype, "d": result["d"], "seq": result["seq"], "status": result["status"]}
    if result["status"] == events.FAILED_STATUS:  # the one-line reason; the traceback is in the study's log
        row["why"] = result.get("message")
    row["fwd mean ms"], row["fwd std ms"] = _mean_std(result.get("forward_ms"))
    row["bwd mean ms"], row["bwd std ms"] = _mean_std(result.get("backward_ms"))
    # timed apart, so their means add; the spread of the sum of two independent timings
    both = row["fwd mean ms"] is not None and row["bwd mean ms"] is not None
    row["fwd+bwd mean ms"] = row["fwd mean ms"] + row["bwd mean ms"] if both else None
    row["fwd+bwd std ms"] = (row["fwd std ms"] ** 2 + row["bwd std ms"] ** 2) ** 0.5 if both else None
    saved = result.get("saved_bytes")
    if result.get("weights_bytes") is not None:  # a layer's projections (their gradients are in after backward)
        row["weights MiB"] = _mib(result["weights_bytes"])
    row["inputs MiB"] = _mib(result.get("inputs_bytes"))
    row["fwd peak MiB"] = _mib(result.get("forward_peak_bytes"))
    row["before backward MiB"] = _mib(result.get("before_backward_bytes"))
    row["saved for backward MiB"] = _mib(saved)
    row["T×T tensors saved"] = round(saved / square_bytes, 2) if saved is not None else None
    row["one T×T tensor MiB"] = square_bytes / 2**20
    row["bwd peak MiB"] = _mib(result.get("backward_peak_bytes"))
    row["after backward MiB"] = _mib(result.get("after_backward_bytes"))
    row["peak MiB"] = _mib(result.get("peak_bytes") or None)
    return row


def flops_row(result: dict, batch: int) -> dict:
    """FLOPs against measured time for one eager cell: the matmuls (QKᵀ + PV) vs the softmax (and scale+mask)."""
    flops = attention_flops(batch, result["seq"], result["d"])  # the benchmark's q, k, v are (batch, T, d)
    parts = {name: statistics.fmean(times) for name, times in (result.get("parts_ms") or {}).items() if times}
    matmul_ms = parts["scores"] + parts["output"] if parts else None
    return {"dtype": result.get("dtype"), "d": result["d"], "seq": result["seq"], "status": result["status"],
            "matmul GFLOP": flops["matmul"] / 1e9, "softmax GFLOP": flops["softmax"] / 1e9,
            "scale+mask GFLOP": flops["scale_mask"] / 1e9,
            "FLOPs matmul/softmax": ratio(flops["matmul"], flops["softmax"]),
            "matmul ms": matmul_ms, "softmax ms": parts.get("softmax"), "scale+mask ms": parts.get("scale_mask"),
            "time matmul/softmax": ratio(matmul_ms, parts.get("softmax"))}
