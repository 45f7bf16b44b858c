"""Starting, following and ending the processes the app runs: a run's session, a study, the inspector, a report.

The app starts every process through ProcessControl; the files a process writes into a run or study directory
are named here, never in the app."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.processes import python_module
from sysprof.profiler_core.documents.liveness import RUN, STUDY, LiveProcess, in_progress, live_process
from sysprof.profiler_core.session.control import ProcessControl, run_to_end
from sysprof.profiler_core.session.inspecting import (
    INSPECT_TIMEOUT_S,
    inspect_argv,
    inspector_not_started,
    read_inspect_output,
)
from sysprof.profiler_core.session.live import settle_died
from sysprof.profiler_core.session.process import mark_killed, session_argv

__all__ = ["INSPECT_TIMEOUT_S", "RUN", "STUDY", "LiveProcess", "ProcessControl", "end_of_run",
           "events_file", "in_progress", "inspect_argv", "inspector_not_started", "live_process", "read_inspect_output",
           "report_argv", "report_target", "run_log", "run_to_end", "session_argv", "settle_died", "study_argv",
           "study_log"]


def run_log(run_dir: Path) -> Path:
    """Where a run's session writes its stderr."""
    return run_dir / rundir.STDERR


def events_file(directory: Path) -> Path:
    """Every event a run's or study's driver emitted, which the app follows and re-attaches from."""
    return directory / rundir.SESSION_EVENTS


def study_log(runs_root: Path) -> Path:
    """A study's stderr, under the runs root: its directory does not exist before it starts."""
    return runs_root / rundir.STUDIES_STDERR


def end_of_run(run_dir: Path, cfg: RunConfig, returncode: int | None, unfinished: bool) -> dict | None:
    """After a run's session exited: its liveness mark cleared (a session killed before it could), and where it
    sent no last event, the event that says how it ended, from a summary of the steps it saved."""
    (run_dir / rundir.LIVE).unlink(missing_ok=True)
    return dict(events.finish_event(mark_killed(run_dir, cfg, returncode))) if unfinished else None


def study_argv(words: list[str], runs_root: Path) -> list[str]:
    """`sysprof sweep|study …` as the process the app starts, streaming STUDY_EVENTS."""
    return [*python_module("sysprof.profiler_core"), *words, "--runs-dir", str(runs_root), "--events"]


def report_argv(paths: list[Path], target: Path) -> list[str]:
    """`sysprof report PATH… -o TARGET` as the process the app starts (matplotlib and pandas stay out of the app)."""
    return [*python_module("sysprof.profiler_core"), "report", *map(str, paths), "-o", str(target)]


def report_target(runs_root: Path) -> Path:
    """Where the app writes a report: RUNS_ROOT/reports/DATE-TIME-report.md (-2, -3 … after a second one within
    the same second), its figures beside it."""
    import itertools
    import time

    stem = runs_root / "reports" / time.strftime("%Y%m%d-%H%M%S")
    names = itertools.chain([f"{stem}-report.md"], (f"{stem}-{n}-report.md" for n in itertools.count(2)))
    return Path(next(name for name in names if not Path(name).exists()))
