"""A table built once, painted twice: columns and rows made from a document, then drawn by the CLI (rich, with
a box) and by a pane (rich, compact), and exported as exactly those rows with their raw numbers.

A table's builder owns what a row holds and how each cell reads; the painters (render/rows.paint_model, the panes)
own only layout. So the CLI, the app and `sysprof export` can never disagree about a table's rows or columns.
No rich here: the app imports it without the CLI's rendering.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sysprof.profiler_core.base.units import NA
from sysprof.profiler_core.tables.figure_data import Panel


def plain(value: Any) -> str:
    return NA if value is None else str(value)


def blank(value: Any) -> str:
    """A cell with nothing measured left empty (the app's tables, where N/A in every other row is noise)."""
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Column:
    key: str  # the row's key
    label: str  # the header on screen and the column's name in an export
    text: Callable[[Any], str] = plain  # how the cell reads (the export keeps the raw value)
    numeric: bool = True  # right-aligned


@dataclass(frozen=True)
class TableModel:
    name: str  # the export's table name (`sysprof export RUN --table NAME`)
    title: str
    columns: tuple[Column, ...]
    rows: Sequence[Mapping[str, Any]] = field(default_factory=list)
    notes: tuple[str, ...] = ()  # lines that belong under the table (a finding, a legend)
    figures: tuple[tuple[str, tuple[Panel, ...]], ...] = ()  # (name, panels) its rows make: the report draws them

    def shown_columns(self) -> tuple[Column, ...]:
        """The columns with a value in some row: a column empty in every row (memory on a CPU) is left out of a
        view, not of an export."""
        return tuple(c for c in self.columns if any(row.get(c.key) is not None for row in self.rows)) or self.columns

    def cells(self, row: Mapping[str, Any]) -> list[str]:
        return [column.text(row.get(column.key)) for column in self.columns]

    def records(self) -> list[dict[str, Any]]:
        """The rows as an export writes them: the screen's column names, the raw values."""
        return [{column.label: row.get(column.key) for column in self.columns} for row in self.rows]


def main_figure(models: Sequence[TableModel]) -> tuple[str, Panel] | None:
    """The main figure, for a screen with room for one: the first panel of the first table that has one, with that
    table's title."""
    for model in models:
        for _, panels in model.figures:
            return model.title, panels[0]
    return None


def fixed_or_na(digits: int, suffix: str = "") -> Callable[[Any], str]:
    return lambda value: NA if value is None else f"{value:,.{digits}f}{suffix}"


def export_tables(models: Sequence[TableModel]) -> dict[str, list[dict[str, Any]]]:
    """name → records, for each model with rows."""
    return {model.name: model.records() for model in models if model.rows}
