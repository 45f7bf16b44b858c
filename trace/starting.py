"""A tracker made for this process: its clock (CUDA events when torch has a GPU initialised or available, else the
host's), a new run directory with the environment it ran in. Anything that stops it from starting is one line on
stderr and a NullTracker: the user's job goes on untraced."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import SysprofError
from sysprof.trace.clock import CudaClock, HostClock
from sysprof.trace.null import NullTracker
from sysprof.trace.run_files import TraceRun
from sysprof.trace.tracker import Tracker


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def new_tracker(name: str, runs_dir: str | Path | None, tokens_per_step: int | None, warmup: int):
    torch = _torch()
    cuda = torch is not None and torch.cuda.is_available()
    config = {"model": name, "source": "trace", "device": "cuda" if cuda else "cpu", "warmup": warmup,
              "tokens_per_step": tokens_per_step}
    try:
        root = rundir.runs_root(None if runs_dir is None else str(runs_dir))
        run_dir = rundir.new_timestamped_dir(root, f"trace-{_slug(name)}")
        run = TraceRun(run_dir, config, _environment(torch, cuda))
    except (SysprofError, OSError) as exc:
        print(f"sysprof trace: not tracing: {exc}", file=sys.stderr)
        return NullTracker()
    clock = CudaClock(torch) if cuda else HostClock()
    return Tracker(run, clock, warmup, tokens_per_step, torch)


def _slug(name: str) -> str:
    kept = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.")
    return kept[:60] or "trace"


def _environment(torch: Any, cuda: bool) -> dict[str, Any]:
    if torch is None:
        return {"device_type": "cpu", "python_version": sys.version.split()[0]}
    from sysprof.profiler_core.runner.environment import collect_env

    return collect_env(torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu"))
