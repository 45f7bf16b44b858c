"""An arm of a shared runner process (arms.py) and its own share of that process.

The arms share one allocator, one inductor and one clock: what each summary reports as the arm's own is worked out
here. Its memory peaks are its own (the other arms' resident memory taken off), a failed arm gives its memory back
to the others, inductor's process-wide count of skipped CUDA graphs is split by arm, and each summary says whom it
shared the process with, its own seconds in it and its tokens/s block by block (what paired.py pairs).
"""
from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

import torch

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.events import ReaderGone, emit
from sysprof.profiler_core.base.records import StepRecord
from sysprof.profiler_core.runner.engine import Runner


@dataclass
class Arm:
    runner: Runner
    position: int
    events_file: TextIO
    own_s: float = 0.0  # seconds this arm's own work took in the process (build, compile, warm-up, steps)
    code: int | None = None  # the exit code once it failed; None while it is measured
    resident: int = 0  # bytes it holds between its steps (its weights, optimizer state, graphs' pools)
    blocks: list[int] = field(default_factory=list)
    finished: bool = False  # its summary is written ok: a stop after it leaves it as it is
    cudagraph_skips: int = 0  # inductor's process-wide count, this arm's share of it
    smoke_s: float | None = None  # the longest its build, compile and warm-up may take (None: no bound)
    measured: int = 0  # its measured steps so far: a block that ran past its steps for time moves the next one on


def cudagraph_skips() -> int:
    """inductor's count of graphs it could not capture, where inductor is loaded (0 where it is not)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return int(utils.counters["inductor"]["cudagraph_skips"]) if utils is not None else 0


def own_memory(arm: Arm, record: StepRecord, others: int) -> StepRecord:
    """The step's peaks less what the other arms held while it ran, so each arm's peak is its own."""
    if not record.get("peak_allocated_bytes"):
        return record
    amended = StepRecord(**record)
    amended["peak_allocated_bytes"] = {phase: value - others for phase, value in record["peak_allocated_bytes"].items()}
    amended["peak_reserved_bytes"] = {}  # the allocator's cache is the process's: no arm's own share of it is known
    amended["others_resident_bytes"] = others
    before, after = record.get("memory_before_backward_bytes"), record.get("memory_after_step_bytes")
    amended["memory_before_backward_bytes"] = None if before is None else before - others
    amended["memory_after_step_bytes"] = None if after is None else after - others
    arm.resident = amended["memory_after_step_bytes"] or arm.resident
    return amended


def release(arm: Arm) -> None:
    """A failed arm's model and optimizer leave the device, so the arms still measured keep its memory."""
    with contextlib.suppress(AttributeError):
        del arm.runner.work
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    arm.resident = 0


def record_sharing(arms: list[Arm], started: float, blocks: int) -> None:
    """Each arm's summary says it shared a process, with whom and what its own share of the time was."""
    ended = time.time()
    for arm in arms:
        path = arm.runner.run_dir / rundir.SUMMARY
        summary = rundir.read_json(path) or {}
        if not summary:
            continue
        summary["ran"] = {"start": started, "end": ended}
        summary["shared_process"] = {"arms": len(arms), "position": arm.position, "own_s": round(arm.own_s, 3),
                                     "blocks": blocks, "measured_in_blocks": arm.blocks,
                                     "phase": "compiled" if arm.runner.cfg.compiles else "eager",
                                     "block_tokens_per_s": _block_rates(arm)}
        if arm.cudagraph_skips and "cudagraph_skips" in (summary.get("compile") or {}):
            summary["compile"] |= {"cudagraph_skips": arm.cudagraph_skips, "cuda_graphs": f"skipped for "
                                   f"{arm.cudagraph_skips} graph(s) (TORCH_LOGS=perf_hints says why)"}
        elif "cudagraph_skips" in (summary.get("compile") or {}):
            summary["compile"] |= {"cudagraph_skips": 0, "cuda_graphs": "used"}
        error = summary.get("error")
        if error and summary.get("status") == events.OOM and len(arms) > 1:
            error["message"] += f" (in one process with {len(arms) - 1} other configurations)"
        rundir.write_json(path, summary)
        with contextlib.suppress(ReaderGone):
            emit(events.ARM_DONE, arm=arm.position, run_dir=str(arm.runner.run_dir), status=summary.get("status"))


def _block_rates(arm: Arm) -> list[float | None]:
    """tokens/s of each block the arm measured (its steps' median wall time, as a run's tokens/s is of all of them):
    what paired.py pairs with the other arms' same blocks."""
    cfg = arm.runner.cfg
    rates: list[float | None] = []
    for block in arm.blocks:
        walls = [s["wall_ms"] for s in arm.runner.steps if s.get("kind") == "measured" and s.get("block") == block]
        rates.append(cfg.batch * cfg.ctx / (statistics.median(walls) / 1e3) if walls else None)
    return rates
