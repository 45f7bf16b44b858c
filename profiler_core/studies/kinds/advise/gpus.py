"""`advise --gpus`: the GPUs the candidates' shared processes run on side by side, one round on each at once
(studies/shared_rounds.py), and what that does to the budget: its minutes are wall-clock minutes, so a round's
processes on several GPUs cost the time of one.

Only an idle GPU is taken: a process of another job on one would slow its rounds alone, and the spread it adds
would hide gains the others show. The diagnosis, the ceiling and a cell that runs alone run on the first one listed.
"""
from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable

from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.base.nvml import gpu_count, gpu_use

IDLE = "idle"  # --gpus idle: every GPU of the node that no process uses
BUSY_BYTES = 2 * 1024**3  # memory in use beyond what an idle GPU shows (its driver's share is under 1 GiB)


def chosen(text: str | None, count: int | None = None) -> list[str]:
    """The GPUs --gpus names, each checked: present, listed once, idle; `idle`: the node's idle ones."""
    if not text:
        return []
    count = gpu_count() if count is None else count
    if count == 0:
        raise UsageError(f"--gpus {text}: no GPU here (NVML found none)")
    if text.strip() == IDLE:
        return _idle_ones(count)
    gpus = [gpu.strip() for gpu in text.split(",")]
    if not all(gpu.isdigit() for gpu in gpus) or len(set(gpus)) != len(gpus):
        raise UsageError(f"--gpus takes GPU numbers, each once (0,1,2) or `{IDLE}`; got {text}")
    for gpu in gpus:
        problem = _problem(int(gpu), count)
        if problem:
            raise UsageError(f"--gpus {text}: {problem}")
    return gpus


def _idle_ones(count: int) -> list[str]:
    idle = [str(index) for index in range(count) if _problem(index, count) is None]
    if not idle:
        raise UsageError(f"--gpus {IDLE}: every one of the {count} GPUs here is in use")
    return idle


def _problem(index: int, count: int) -> str | None:
    if index >= count:
        return f"GPU {index} is not here ({count} GPU(s), numbered 0 to {count - 1})"
    use = gpu_use(index)
    if use is None:
        return f"GPU {index} cannot be read through NVML"
    processes, used = use
    if processes or used > BUSY_BYTES:
        return f"GPU {index} is in use ({processes} process(es), {used / 1024**3:.1f} GiB taken): name idle ones"
    return None


def run_diagnosis_on(gpus: list[str]) -> None:
    """The processes this advisor starts without a GPU of their own (the diagnosis, the ceiling, a cell alone) run
    on the first GPU listed; each round's process is told its own."""
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[0]


def wall_share(repeats: int, lanes: int) -> float:
    """The share of a cell's process-seconds that passes on the clock when its processes run `lanes` at a time."""
    lanes = max(1, min(lanes, repeats))
    return math.ceil(repeats / lanes) / repeats


def union_s(windows: Iterable[tuple[float, float]]) -> float:
    """Seconds on the clock that (start, end) windows cover: processes side by side count once."""
    total, reached = 0.0, -math.inf
    for start, end in sorted(windows):
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


def gpus_for(args: argparse.Namespace, device: str, saved: list[str] | None = None) -> list[str]:
    """The GPUs the rounds run on, checked; the first one runs everything else."""
    gpus = chosen(args.gpus) if args.gpus else list(saved or [])
    if gpus and device != "cuda":
        raise UsageError("--gpus measures on GPUs; this config runs on the CPU")
    if gpus and args.fresh_processes:
        raise UsageError("--gpus runs the rounds of shared processes side by side; --fresh-processes runs a "
                         "process per cell, one at a time: leave one of them out")
    run_diagnosis_on(gpus)
    return gpus
