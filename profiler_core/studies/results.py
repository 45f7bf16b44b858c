"""A study's tables, rebuilt from its directory alone: the CLI prints them, the app shows them live and
offline, `sysprof export` writes them. Each kind builds its own (studies/kinds/); a plain sweep gets the default
tables, so every consumer gets the same shape."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.errors import StudyError
from sysprof.profiler_core.documents.study_plans import PLAIN_SWEEP
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kernel_tables import profiled_sweep_tables, varied_fields
from sysprof.profiler_core.studies.kinds import KINDS
from sysprof.profiler_core.studies.memory_tables import memory_sweep_tables
from sysprof.profiler_core.studies.tables import pivot, visible_columns

PIVOT_VALUE = "fwd mean ms"


def study_tables(study_dir: Path) -> dict[str, list[dict]]:
    """Title → records, the main table first. Cells not yet run show as pending rows. The directory is read once
    (studies/document.py); every table is built from that."""
    study = Study.load(study_dir)
    found = KINDS.get(study.kind)
    if found is None and study.kind != PLAIN_SWEEP:  # read as a sweep, its own tables would be silently missing
        raise StudyError(f"{study_dir} is a study of kind {study.kind!r}, which this sysprof does not know (it knows "
                         f"{', '.join([PLAIN_SWEEP, *KINDS])}): upgrade sysprof to read it")
    if found is not None and not found.sweep_cells:
        return found.tables(study)
    if found is not None:
        return found.tables(study) | {"cells": _sweep_table(study)}
    return ({"sweep results": _sweep_table(study)} | _default_pivot(study)
            | profiled_sweep_tables(study.rows, study.runs) | memory_sweep_tables(study.rows, study.runs))


def _sweep_table(study: Study) -> list[dict]:
    columns = visible_columns(study.rows, list(dict.fromkeys([*study.varied, *varied_fields(study.rows)])))
    return [{c: row[c] for c in columns} for row in study.rows]


def _default_pivot(study: Study) -> dict[str, list[dict]]:
    """With two or more varied fields: forward ms by all but the last of them × the last."""
    varied = [name if name != "model" else "d_model" for name in study.varied]
    if len(varied) < 2 or not any(row.get(PIVOT_VALUE) is not None for row in study.rows):
        return {}
    index, columns = varied[:-1], varied[-1:]
    table = pivot(study.rows, index, columns, PIVOT_VALUE)
    return {f"{PIVOT_VALUE} by {' × '.join(index)} × {columns[0]}": table.to_dict("records")}


def all_cells_done(tables: dict[str, list[dict]]) -> bool:
    """Every cell finished (ok or oom) in every table that has a status (a compared pair reads "ok/oom");
    a precision table has none of its own, so its cells table decides. A row the host could not run is no failure."""
    return all(part in events.DONE_STATUSES for rows in tables.values() for row in rows
               if row.get("status") != events.NOT_RUN for part in str(row.get("status", events.OK)).split("/"))
