"""Driver of the attention microbenchmark: cells grouped into runner processes, a fresh one after each OOM."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from profiler_core import events, rundir
from profiler_core.config import DTYPE_BYTES

DTYPES = ("fp32", "bf16")  # what the benchmark runs in (no autocast: the inputs are made in it)


def grid(impls: list[str], dims: list[int], seqs: list[int]) -> list[list[dict]]:
    """One group per (implementation, d), sequence lengths ascending: OOMs come at the end of a group."""
    return [[{"impl": impl, "d": d, "seq": seq} for seq in sorted(seqs)] for impl in impls for d in dims]


def _bench_argv(cells: list[dict], batch: int, iters: int, dtype: str) -> list[str]:
    return [sys.executable, "-m", "profiler_core.runner.attention_bench", "--cells-json", json.dumps(cells),
            "--batch", str(batch), "--iters", str(iters), "--dtype", dtype]


def run_group(cells: list[dict], batch: int, iters: int, dtype: str, log: Path) -> list[dict]:
    """Every cell of the group gets a result; after an OOM the rest run in a new process."""
    results: list[dict] = []
    while len(results) < len(cells):
        remaining = cells[len(results):]
        with log.open("ab") as stderr:
            done = subprocess.run(_bench_argv(remaining, batch, iters, dtype), stdout=subprocess.PIPE,
                                  stderr=stderr, text=True)
        found = events.decode_lines(done.stdout, (events.CELL_RESULT, events.FAILED))
        cells_done = [{k: v for k, v in e.items() if k != "event"} for e in found if e["event"] == events.CELL_RESULT]
        if not cells_done:  # the process died (or refused) before a cell finished
            reason = found[0].get("message") if found else f"benchmark process exited with {done.returncode}"
            results.append(remaining[0] | {"status": events.FAILED_STATUS, "message": reason})
        results += cells_done
    return results


def write_plan(study_dir: Path, groups: list[list[dict]], batch: int, iters: int, dtype: str) -> None:
    """What the study will measure: enough to rebuild its table from cells.jsonl, also half-way."""
    rundir.write_json(study_dir / rundir.ATTENTION_PLAN, {"study": "attention", "batch": batch, "iters": iters,
                                                   "dtype": dtype, "cells": [c for g in groups for c in g],
                                                   "created": time.time()})


def run_study(study_dir: Path, groups: list[list[dict]], batch: int, iters: int, dtype: str,
              on_cell: Callable[[dict], None]) -> list[dict]:
    write_plan(study_dir, groups, batch, iters, dtype)
    rows = []
    for group in groups:
        for result in run_group(group, batch, iters, dtype, study_dir / rundir.STDERR):
            row = summarize_cell(result, batch, dtype)
            rundir.append_jsonl(study_dir / rundir.ATTENTION_CELLS, result)
            on_cell(row)
            rows.append(row)
    return rows


def summarize_cell(result: dict, batch: int, dtype: str) -> dict:
    """A table row: mean times, and the saved memory in units of one (B, T, T) tensor."""
    square_bytes = batch * result["seq"] ** 2 * DTYPE_BYTES[dtype]
    row = {"impl": result["impl"], "d": result["d"], "seq": result["seq"], "status": result["status"]}
    forward, backward = result.get("forward_ms"), result.get("backward_ms")
    row["fwd mean ms"] = statistics.fmean(forward) if forward else None
    row["bwd mean ms"] = statistics.fmean(backward) if backward else None
    saved = result.get("saved_bytes")
    row["saved for backward MiB"] = saved / 2**20 if saved is not None else None
    row["T×T tensors saved"] = round(saved / square_bytes, 2) if saved is not None else None
    row["one T×T tensor MiB"] = square_bytes / 2**20
    row["peak MiB"] = result["peak_bytes"] / 2**20 if result.get("peak_bytes") else None
    return row


