"""A tracker made for this process: a new run directory under the runs root, or, under `sysprof trace`, the one it
made (RUN_DIR_ENV; each rank of a torchrun job in its place there, as `sysprof run --nproc` lays them out). Which
clock times the loop is decided at its first step (tracker.py). Anything that stops it from starting is one line on
stderr and a NullTracker: the user's job goes on untraced."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import SysprofError
from sysprof.trace.null import NullTracker
from sysprof.trace.run_files import TraceRun, environment
from sysprof.trace.step_windows import windows_from_environment
from sysprof.trace.tracker import Timing, Tracker

RUN_DIR_ENV = "SYSPROF_TRACE_DIR"  # the run directory `sysprof trace` made for the job it launched


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def new_tracker(name: str, runs_dir: str | Path | None, tokens_per_step: int | None, warmup: int,
                device: str | None, memory_every: int):
    torch = _torch()
    config = {"model": name, "source": "trace", "device": device, "warmup": warmup,
              "tokens_per_step": tokens_per_step, "memory_every": memory_every}
    try:
        run = TraceRun(_run_dir(name, runs_dir), config, environment(torch, False), _rank(),
                       settled_by_launcher=bool(os.environ.get(RUN_DIR_ENV)))
    except (SysprofError, OSError) as exc:
        print(f"sysprof trace: not tracing: {exc}", file=sys.stderr)
        return NullTracker()
    tracker = Tracker(run, Timing(warmup, tokens_per_step, device, memory_every), torch)
    tracker.windows = windows_from_environment(torch, run.run_dir)
    return tracker


def _run_dir(name: str, runs_dir: str | Path | None) -> Path:
    given = os.environ.get(RUN_DIR_ENV)
    if not given:
        return rundir.new_timestamped_dir(rundir.runs_root(None if runs_dir is None else str(runs_dir)),
                                          f"trace-{slug(name)}")
    rank = _rank()
    own = rundir.rank_dir(Path(given), rank["rank"], rank["local_rank"]) if rank else Path(given)
    own.mkdir(parents=True, exist_ok=True)
    return own


def _rank() -> dict[str, int] | None:
    """Under torchrun: {rank, local_rank, world}, as a `sysprof run` rank's summary has it."""
    if "RANK" not in os.environ:
        return None
    return {"rank": int(os.environ["RANK"]), "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
            "world": int(os.environ.get("WORLD_SIZE", "1"))}


def slug(name: str) -> str:
    kept = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.")
    return kept[:60] or "trace"
