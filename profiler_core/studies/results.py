"""A study's tables, rebuilt from its directory alone: the CLI prints them, the app shows them live and
offline, `sysprof export` writes them. Each kind builds its own (studies/kinds/); a plain sweep gets the default
tables, so every consumer gets the same shape."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core import events, rundir
from sysprof.profiler_core.errors import StudyError
from sysprof.profiler_core.studies.kernel_tables import profiled_sweep_tables
from sysprof.profiler_core.studies.kinds import KINDS
from sysprof.profiler_core.studies.memory_tables import memory_sweep_tables
from sysprof.profiler_core.studies.tables import pivot, sweep_rows, sweep_run_dirs, visible_columns
from sysprof.profiler_core.study_plans import study_kind

PIVOT_VALUE = "fwd mean ms"


def study_tables(study_dir: Path) -> dict[str, list[dict]]:
    """Title → records, the main table first. Cells not yet run show as pending rows."""
    kind = study_kind(study_dir)
    if kind is None:
        raise StudyError(f"{study_dir} is not a sweep or study directory")
    found = KINDS.get(kind)
    if found is not None and not found.sweep_cells:
        return found.tables(study_dir)
    rows = sweep_rows(study_dir)
    if found is not None:
        return found.tables(study_dir) | {"cells": _sweep_table(study_dir, rows)}
    return ({"sweep results": _sweep_table(study_dir, rows)} | _default_pivot(study_dir, rows)
            | profiled_sweep_tables(rows, sweep_run_dirs(study_dir))
            | memory_sweep_tables(rows, sweep_run_dirs(study_dir)))


def _varied(study_dir: Path) -> list[str]:
    plan = rundir.read_json(study_dir / rundir.SWEEP_PLAN) or {}
    return plan.get("varied", [])


def _sweep_table(study_dir: Path, rows: list[dict]) -> list[dict]:
    columns = visible_columns(rows, _varied(study_dir))
    return [{c: row[c] for c in columns} for row in rows]


def _default_pivot(study_dir: Path, rows: list[dict]) -> dict[str, list[dict]]:
    """With two or more varied fields: forward ms by all but the last of them × the last."""
    varied = [name if name != "model" else "d_model" for name in _varied(study_dir)]
    if len(varied) < 2 or not any(row.get(PIVOT_VALUE) is not None for row in rows):
        return {}
    index, columns = varied[:-1], varied[-1:]
    table = pivot(rows, index, columns, PIVOT_VALUE)
    return {f"{PIVOT_VALUE} by {' × '.join(index)} × {columns[0]}": table.to_dict("records")}


def all_cells_done(tables: dict[str, list[dict]]) -> bool:
    """Every cell finished (ok or oom) in every table that has a status (a compared pair reads "ok/oom");
    a precision table has none of its own, so its cells table decides. A row the host could not run is no failure."""
    return all(part in events.DONE_STATUSES for rows in tables.values() for row in rows
               if row.get("status") != events.NOT_RUN for part in str(row.get("status", events.OK)).split("/"))
