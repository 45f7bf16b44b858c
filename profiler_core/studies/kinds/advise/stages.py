"""What the advise study's stages share: where the diagnosis's cell is and what its process showed, whether this
config runs on a GPU, whether a stage's cells can be arms of shared processes, running a stage's cells, what its
process-seconds take on the clock, and the study's advice file updated. Apart from study.py, which runs the first
stage, so that the stages after it (combination.py, refine_plan.py) use the same without importing it."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.nvml import visible_gpu_count
from sysprof.profiler_core.session.arms import shareable
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.kinds.advise import gpus as advise_gpus
from sysprof.profiler_core.studies.kinds.advise.budget_plan import COMPILED_PROCESSES
from sysprof.profiler_core.studies.kinds.advise.goal import goal_of
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, seen_of, sharing_problem
from sysprof.profiler_core.studies.progress import Progress

DIAGNOSIS_CELL = 0  # the profiled process of the config as given; the plan's cells come after it


def on_gpu(base: RunConfig) -> bool:
    return base.device == "cuda" or (base.device == "auto" and visible_gpu_count() > 0)


def diagnosis_seen(diagnosis: Any, base: RunConfig) -> Seen:
    """What the diagnosis's process showed: its measured peak per phase (of a process that ended ok: an OOM's peak
    is not what the config needs), the arguments a user's factory was given, the GPU's compute capability."""
    summary = diagnosis.summary or {}
    peaks = (summary.get("peak_memory_bytes") or {}) if summary.get("status") == events.OK else {}
    kwargs = (diagnosis.run.manifest.get("model") or {}).get("kwargs") if base.model_factory else None
    capability = (diagnosis.run.manifest.get("env") or {}).get("capability")
    return seen_of(base, {phase: int(peak) for phase, peak in peaks.items() if peak}, kwargs, capability)


def why_not_shared(args: argparse.Namespace, configs: list[RunConfig], limit: tuple[int, str] | None,
             seen: Seen) -> str | None:
    """Why the cells cannot be arms of shared processes (None: they are): --fresh-processes, a pass or device they
    cannot share, or memory their models together would not fit in."""
    if args.fresh_processes:
        return "--fresh-processes"
    return shareable(configs) or sharing_problem(configs, limit, seen)


def run_cells(args: argparse.Namespace, study_dir: Path, shared: bool) -> None:
    """The plan's cells not done: each round one shared process measuring all of them, else a fresh process each."""
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    gpus = advice.get("gpus") or []
    with Progress(args.events).recorded(study_dir) as progress:
        sweep.run(study_dir, progress.sweep_listener("advise", study_dir), shared=shared, gpus=gpus if shared else (),
                  min_block_s=goal_of(advice).min_block_s)


def wall_share(study_dir: Path, base: RunConfig, shared: bool) -> float:
    """What a later stage's process-seconds take on the clock: all of them on one GPU; on several, the share of a
    compiled cell's (its fewer processes gain least from running side by side)."""
    gpus = (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}).get("gpus") or []
    return advise_gpus.wall_share(min(base.repeats, COMPILED_PROCESSES), len(gpus) if shared else 1)


def update_advice(study_dir: Path, **fields: Any) -> None:
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}) | fields)
