"""Which study a directory holds, read from its plan file: json and paths only, so the app lists studies without
pandas and a session settling a study that died knows whether it resumes."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import rundir

# Each plan file and the kind a plan of it is when it names none (plans from before "study" was recorded).
PLAIN_SWEEP = "sweep"  # `sysprof sweep`: a grid of runs, no kind of its own
PLAN_FILES = ((rundir.SWEEP_PLAN, PLAIN_SWEEP), (rundir.ATTENTION_PLAN, "attention"))
AB_STUDY = "ab"  # `sysprof ab`: a sweep of two cells, A and B, run interleaved
RECOMMENDED_TABLE = "recommended"  # `sysprof advise`'s answer (the app's Studies puts it into Configure)


def study_plan(study_dir: Path) -> tuple[str, dict] | None:
    """(kind, plan) of a study directory, or None when it holds no plan; a torn plan reads as empty."""
    for name, default_kind in PLAN_FILES:
        if (study_dir / name).is_file():
            try:
                plan = rundir.read_json(study_dir / name) or {}
            except rundir.RunDirError:
                plan = {}
            return plan.get("study", default_kind), plan
    return None


def study_kind(study_dir: Path) -> str | None:
    found = study_plan(Path(study_dir))
    return found[0] if found else None
