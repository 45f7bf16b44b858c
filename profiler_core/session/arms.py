"""Start a shared runner process of several configurations (runner/arms.py) and collect each one's summary, from
the torch-free side. Its stderr and a record of which directories shared it (their order, its wall-clock window)
go to a folder of its own, so a study can say what ran together and what the process's start-up cost."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.processes import torch_module
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.session.process import RunnerProcess, mark_killed

BLOCKS = 4  # measured steps of each arm in this many blocks, the order of the arms reversed in every other one
SHARED_RECORD = "shared.json"  # in the process's folder: its arms' directories (relative to it) in order, its window


# The longest an arm's smoke test (build, compile, warm-up) may take before it fails and the others go on: a 2.7B
# build and warm-up takes under a minute, a reduce-overhead compile under two, max-autotune's about six.
SMOKE_BOUND_S = {"eager": 600.0, "compiled": 1200.0, "max-autotune": 2400.0}


def smoke_bound_s(cfg: RunConfig) -> float:
    if not cfg.compiles:
        return SMOKE_BOUND_S["eager"]
    return SMOKE_BOUND_S["max-autotune" if cfg.compile_mode.startswith("max-autotune") else "compiled"]


def arms_argv(arms: list[tuple[RunConfig, Path]], blocks: int = BLOCKS, min_block_s: float = 0.0) -> list[str]:
    spec = [{"run_dir": str(path), "config": cfg.to_dict(), "smoke_s": smoke_bound_s(cfg)} for cfg, path in arms]
    return [*torch_module("sysprof.profiler_core.runner.arms"), "--arms-json", json.dumps(spec),
            "--blocks", str(blocks)] + (["--min-block-s", f"{min_block_s:g}"] if min_block_s else [])


def shareable(configs: list[RunConfig]) -> str | None:
    """Why these configurations cannot share one process (None: they can): a capture pass, ranks, or devices
    that differ."""
    if any(cfg.profiler != "none" or cfg.memory for cfg in configs):
        return "a profiled or memory pass runs in a process of its own"
    if any(cfg.distributed for cfg in configs):
        return "several ranks run under torchrun, one process each"
    if len({cfg.device for cfg in configs}) > 1:
        return "the configurations name different devices"
    return None


def run_shared(arms: list[tuple[RunConfig, Path]], folder: Path,
               on_arm_done: Callable[[int, str], None] = lambda arm, status: None,
               env: dict[str, str] | None = None, min_block_s: float = 0.0) -> list[RunSummary]:
    """One process measuring every arm; each arm's summary, in order (a killed process's arms are marked so, with
    the steps they finished). env: variables the process gets beyond ours (the GPU it runs on); min_block_s: the
    shortest an arm's block may last (runner/arms.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    # relative to this folder: a study copied elsewhere still finds its arms
    record = {"arms": [os.path.relpath(path, folder) for _, path in arms], "start": time.time()} | (
        {"env": env} if env else {})
    rundir.write_json(folder / SHARED_RECORD, record)
    process = RunnerProcess(arms_argv(arms, min_block_s=min_block_s), folder, env=env)
    try:
        for event in process.events():
            if event["event"] == events.ARM_DONE:
                on_arm_done(int(event["arm"]), str(event.get("status")))
    except KeyboardInterrupt:
        process.interrupt()  # SIGINT: every arm ends as cancelled with its steps and its summary
    code = process.proc.returncode
    rundir.write_json(folder / SHARED_RECORD, record | {"end": time.time(), "exit_code": code})
    return [_summary_of(path, cfg, code) for cfg, path in arms]


def _summary_of(path: Path, cfg: RunConfig, code: int | None) -> RunSummary:
    try:
        summary = rundir.read_summary(path)
    except rundir.RunDirError:
        summary = None  # torn by a kill mid-write: rebuilt from the steps that finished
    return summary or mark_killed(path, cfg, code)


def shared_window(folder: Path) -> tuple[float, float] | None:
    """(start, end) on the clock of a shared process, start-up included; None for a record without an end."""
    try:
        record = rundir.read_json(folder / SHARED_RECORD) or {}
    except rundir.RunDirError:
        return None
    if "end" not in record:
        return None
    start = float(record.get("start", 0.0))
    return start, max(float(record["end"]), start)


def shared_seconds(folder: Path) -> float:
    """The wall-clock seconds a shared process took, start-up included (0 for a record without an end)."""
    window = shared_window(folder)
    return window[1] - window[0] if window else 0.0
