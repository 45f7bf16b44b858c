"""A study's tables as table models, each with the figures its rows make: what the Studies screen shows, the CLI
prints, `sysprof export` writes and the report draws, built once from the study's directory (results.py)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base.units import table_number
from sysprof.profiler_core.studies.results import study_tables
from sysprof.profiler_core.tables.figure_data import table_figures
from sysprof.profiler_core.tables.model import Column, TableModel


def study_models(study_dir: Path) -> list[TableModel]:
    """The study's tables, the main one first; cells not yet run are pending rows."""
    return [records_model(title, rows) for title, rows in study_tables(study_dir).items()]


def records_model(title: str, rows: Sequence[Mapping[str, Any]]) -> TableModel:
    """Rows whose keys are their column names: every key any row has, in order of first appearance; a column is
    numeric where some row holds a number there."""
    keys = dict.fromkeys(key for row in rows for key in row)
    columns = tuple(Column(key, key, table_number, numeric=_numeric(rows, key)) for key in keys)
    figures = tuple((name, tuple(panels)) for name, panels in table_figures(title, [dict(row) for row in rows]))
    return TableModel(name=title, title=title, columns=columns, rows=list(rows), figures=figures)


def _numeric(rows: Sequence[Mapping[str, Any]], key: str) -> bool:
    return any(isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool) for row in rows)


def model_titled(models: Sequence[TableModel], title: str) -> TableModel | None:
    return next((model for model in models if model.title == title), None)
