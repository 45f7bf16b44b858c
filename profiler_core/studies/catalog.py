"""Which directories are sweeps or studies, of what kind, and how far they got: json and paths only, so the
app can list them without loading pandas."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.documents.study_plans import study_plan


def _finished_cells(study_dir: Path) -> int:
    """Cells that finished (ok or oom). A bench study's plan (its own processes, not runs) keeps a line per finished
    cell; a sweep's cells are run directories, each finished once its summary says so."""
    if (study_dir / rundir.ATTENTION_PLAN).is_file():
        return len(rundir.read_jsonl(study_dir / rundir.ATTENTION_CELLS))
    done = 0
    for summary_path in (study_dir / rundir.SWEEP_CELLS_DIR).glob(f"*/{rundir.SUMMARY}"):
        try:
            done += (rundir.read_json(summary_path) or {}).get("status") in events.DONE_STATUSES
        except rundir.RunDirError:
            pass  # a torn summary: that cell runs again on resume
    return done


def study_record(study_dir: Path) -> dict | None:
    """{"name", "path", "kind", "cells", "finished", "created"}, or None when it is no study directory."""
    found = study_plan(study_dir)
    if found is None:
        return None
    kind, plan = found
    return {"name": study_dir.name, "path": str(study_dir), "kind": kind, "cells": len(plan.get("cells", [])),
            "finished": _finished_cells(study_dir), "created": plan.get("created") or study_dir.stat().st_mtime}


def list_studies(root: Path) -> list[dict]:
    """Study records under root, newest first."""
    if not root.is_dir():
        return []
    records = [study_record(path) for path in root.iterdir() if path.is_dir()]
    return sorted((r for r in records if r), key=lambda r: r["created"], reverse=True)
