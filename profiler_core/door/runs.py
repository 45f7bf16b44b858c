"""Run directories: where they are, which they are, the Runs screen's rows, their analysis folders, and the app's
note of its own cost."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.rundir import runs_root
from sysprof.profiler_core.documents.analysis_folder import AnalysisFolder
from sysprof.profiler_core.door.run_list import list_run_records

__all__ = ["AnalysisFolder", "export_target", "is_run_dir", "list_run_records", "new_run_dir",
           "note_app_load", "note_app_start", "runs_root"]


def is_run_dir(path: Path) -> bool:
    return (path / rundir.MANIFEST).is_file()


def new_run_dir(root: Path, cfg: RunConfig) -> Path:
    return rundir.new_run_dir(root, cfg)


def export_target(base: Path, table_name: str) -> Path:
    """Where the app writes a table it exports: BASE/exports/NAME.md."""
    return base / rundir.EXPORTS_DIR / f"{table_name}.md"


def note_app_start(run_dir: Path, redraw_s: float) -> None:
    """The app started this run and redraws at most every redraw_s while its steps arrive."""
    rundir.write_json(run_dir / rundir.APP_RECORD, {"started_from": "app", "redraws_per_s_at_most": 1 / redraw_s})


def note_app_load(run_dir: Path, cpu_pct: float | None) -> None:
    """The app's CPU while the steps were measured (% of one core), beside its note of the start."""
    record = rundir.read_json(run_dir / rundir.APP_RECORD) or {}
    rundir.write_json(run_dir / rundir.APP_RECORD, record | {"ui_cpu_pct_while_measured": cpu_pct})
