"""The Runs screen's list: one row per run or study directory, newest first (door/run_list.py gathers the rows).
Status and the median step stay on screen at 80 columns; the view scrolls sideways for the rest."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sysprof.profiler_core.base.units import format_ms
from sysprof.profiler_core.tables.model import Column, TableModel, blank

NAME_WIDTH = 22  # the timestamp and the model; the rest of a run's name is in the columns


def cut_name(name: Any) -> str:
    """A name longer than its column ends in "…": cut, and seen to be."""
    text = blank(name)
    return text if len(text) <= NAME_WIDTH else text[:NAME_WIDTH - 1] + "…"


def _ms(value: Any) -> str:
    return "" if value is None else format_ms(value)


RUNS_COLUMNS = (Column("name", "run", cut_name, numeric=False), Column("state", "status", blank, numeric=False),
                Column("step_median_ms", "median step", _ms), Column("steps", "steps", blank),
                *(Column(key, key, blank, numeric=key in ("ctx", "batch"))
                  for key in ("model", "mode", "ctx", "batch", "dtype", "attention", "device")))


def runs_list_model(records: Sequence[dict]) -> TableModel:
    return TableModel(name="runs", title="runs", columns=RUNS_COLUMNS, rows=list(records))
