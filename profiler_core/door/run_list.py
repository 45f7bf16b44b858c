"""The rows of the Runs screen: every run and study directory under a runs root and those opened by path, newest
first; an unreadable one is a row that says so, not a failed list."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import model_column
from sysprof.profiler_core.base.errors import RunDirError
from sysprof.profiler_core.base.rundir import list_runs
from sysprof.profiler_core.documents.liveness import live_process
from sysprof.profiler_core.documents.run_document import Run
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.studies.catalog import list_studies, study_record


def run_record(path: Path) -> dict:
    """One run's row: its name and state, its median step, the settings the list shows, and its summary."""
    try:
        run = Run.load(path)
    except RunDirError as exc:
        return {"name": path.name, "path": str(path), "status": "unreadable", "state": "unreadable",
                "error": str(exc), "started": 0}
    config = run.config
    running = _running(path)
    return {"name": path.name, "path": str(path), "status": "running" if running else run.status,
            "state": events.run_state(run.summary, running),
            "model": model_column(config) if "model" in config else None, "mode": config.get("mode"),
            "ctx": config.get("ctx"), "batch": config.get("batch"), "dtype": config.get("dtype"),
            "attention": config.get("attention"), "device": run.env.get("device_type"),
            "steps": run.measured_count, "step_median_ms": run.median_ms(),
            "started": run.manifest.get("started") or path.stat().st_mtime, "summary": run.summary or {}}


def _running(path: Path) -> bool:
    """Is the directory's process alive (then the app re-attaches to it)?"""
    live = live_process(path)
    return live is not None and live.alive


def study_row(record: dict) -> dict:
    """A sweep or study in the list: its kind and how many cells finished, in the status column."""
    cells = f"{record['kind']} {record['finished']}/{record['cells']}"
    status = f"{cells} running" if _running(Path(record["path"])) else cells
    return {"name": record["name"], "path": record["path"], "status": status, "state": status,
            "started": record["created"], "study": True}


def list_run_records(root: Path, extra: list[Path]) -> list[dict]:
    """Runs and studies under root plus the runs and studies opened on the command line, newest first."""
    paths = {p.resolve(): p for p in [*extra, *list_runs(root)]}
    records = [run_record(p) for p in paths.values() if study_kind(p) is None]
    found = list_studies(root)
    listed = {Path(record["path"]).resolve() for record in found}
    found += [record for path in extra if study_kind(path) is not None and path.resolve() not in listed
              for record in [study_record(path)] if record]  # studies opened from elsewhere: listed too
    records += [study_row(record) for record in found]
    return sorted(records, key=lambda r: r["started"], reverse=True)
