"""A tracker made for this process: a new run directory under the runs root. Which clock times the loop is decided
at its first step (tracker.py). Anything that stops it from starting is one line on stderr and a NullTracker: the
user's job goes on untraced."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import SysprofError
from sysprof.trace.null import NullTracker
from sysprof.trace.run_files import TraceRun, environment
from sysprof.trace.tracker import Timing, Tracker


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
        root = rundir.runs_root(None if runs_dir is None else str(runs_dir))
        run_dir = rundir.new_timestamped_dir(root, f"trace-{_slug(name)}")
        run = TraceRun(run_dir, config, environment(torch, False))
    except (SysprofError, OSError) as exc:
        print(f"sysprof trace: not tracing: {exc}", file=sys.stderr)
        return NullTracker()
    return Tracker(run, Timing(warmup, tokens_per_step, device, memory_every), torch)


def _slug(name: str) -> str:
    kept = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.")
    return kept[:60] or "trace"
