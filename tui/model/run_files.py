"""Where a run's files are, and a saved run directory read back as the state a live run ends in."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sysprof.profiler_core.api import Run
from sysprof.tui.model.state import RunState


def state_from_run_dir(path: Path) -> RunState:
    """A saved run, shown exactly as a live one would be at its end (profiled-pass steps kept apart)."""
    run = Run.load(path, tolerant=True)
    summary = run.summary
    clean = [s for s in run.steps if not s.get("pass")]
    return RunState(stage="finished" if run.status == "ok" else "failed", run_dir=str(path),
                    env=run.manifest.get("env"), config=run.manifest.get("config"),
                    summary=summary or None, error=summary.get("error") if summary else None,
                    warmup_steps=tuple(s for s in clean if s.get("kind") == "warmup"),
                    steps=tuple(s for s in clean if s.get("kind") == "measured"),
                    pass_steps=tuple(s for s in run.steps if s.get("pass")),
                    planned_steps=run.config.get("steps", 0), notices=run.damage_notes())


def _resolve(state: RunState, path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() or not state.run_dir else Path(state.run_dir) / candidate


def analysis_dir(state: RunState, kind: str) -> Path | None:
    """The folder with kind's analysis ("kernels" | "memory"): announced by an event, else the default place."""
    saved: Mapping[str, Any] = state.summary or {}
    announced = state.analysis_path(kind) or saved.get(kind)
    if isinstance(announced, str) and announced:
        path = _resolve(state, announced)
        return path.parent if path.suffix else path
    return Path(state.run_dir) / kind if state.run_dir else None


def short_path(path: str | Path) -> str:
    """A path relative to the working directory when it is under it (shorter, and stable in tests)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
