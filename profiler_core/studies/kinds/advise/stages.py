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
from sysprof.profiler_core.base.errors import StudyFailed
from sysprof.profiler_core.base.nvml import visible_gpu_count
from sysprof.profiler_core.session.arms import shareable
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
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
    stop_if_stopped(study_dir)


def stop_if_stopped(study_dir: Path) -> None:
    """A stage whose process was stopped (SIGINT, SIGTERM, a hang-up reach the whole process group) ends the advise
    as the stop meant, with what finished kept: the next stage must not start."""
    if any(_kind(cell.summary) == events.CANCELLED for cell in Study.load(study_dir).cells):
        raise KeyboardInterrupt


def diagnosis_failure(study_dir: Path) -> str | None:
    """Why the diagnosis did not finish (its config fails, the process died), or None: a config that fails there
    would fail in every candidate alike, so the advise ends with its reason."""
    cells = Study.load(study_dir).cells
    summary = cells[DIAGNOSIS_CELL].summary if len(cells) > DIAGNOSIS_CELL else None
    if summary is None:
        return "the diagnosis left no summary"
    if summary.get("status") in (events.OK, events.OOM):
        return None
    return events.cell_reason(summary) or str(summary.get("status"))


def _kind(summary: dict | None) -> str | None:
    error = (summary or {}).get("error") or {}
    return error.get("kind") or (summary or {}).get("status")


def wall_share(study_dir: Path, base: RunConfig, shared: bool) -> float:
    """What a later stage's process-seconds take on the clock: all of them on one GPU; on several, the share of a
    compiled cell's (its fewer processes gain least from running side by side)."""
    gpus = (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}).get("gpus") or []
    return advise_gpus.wall_share(min(base.repeats, COMPILED_PROCESSES), len(gpus) if shared else 1)


def update_advice(study_dir: Path, **fields: Any) -> None:
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, (rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}) | fields)


def after_the_diagnosis(study_dir: Path) -> None:
    """Stopped during the diagnosis: stopped. A diagnosis that failed: the same config fails in every candidate, so
    nothing else runs and its reason is the advise's."""
    stop_if_stopped(study_dir)
    failed = diagnosis_failure(study_dir)
    if failed:
        raise StudyFailed(f"the diagnosis (the config as given) did not finish: {failed}; no candidate was run "
                          f"({study_dir})")
