"""A DataTable of records whose rows can be marked (space) for export or comparison."""
from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from sysprof.profiler_core.units import Formatter
from sysprof.tui.keys import key_label

MARK = "✓"


class MarkableTable(DataTable):
    """Shows a list of dicts; keeps the records so export gets raw values, not the formatted text."""

    BINDINGS = [Binding("space", "toggle_mark", "Mark")]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.records: list[dict] = []
        self.marked: set[int] = set()

    def show(self, columns: dict[str, str], records: list[dict], formatters: dict[str, Formatter] | None = None,
             widths: dict[str, int] | None = None) -> None:
        """columns: record key → header label; formatters/widths per key (missing: str / auto)."""
        formatters, widths = formatters or {}, widths or {}
        self.clear(columns=True)
        self.records, self.marked = list(records), set()
        rows = [[formatters.get(key, _text)(record.get(key)) for key in columns] for record in self.records]
        self.add_column(" ", key="mark", width=1)
        for position, (key, label) in enumerate(columns.items()):
            # Sized here rather than on the table's next idle pass, so the first frame already has its widths.
            fitted = max([cell_len(label), *(cell_len(row[position]) for row in rows)])
            self.add_column(label, key=key, width=widths.get(key, fitted))
        for index, cells in enumerate(rows):
            self.add_row("", *cells, key=str(index))

    def action_toggle_mark(self) -> None:
        if not self.records:
            return
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        index = _record_index(row_key)
        self.marked ^= {index}
        self.update_cell(row_key, "mark", MARK if index in self.marked else "")

    def selected_records(self) -> list[dict]:
        """The marked rows in table order, or every row when none is marked."""
        return [self.records[i] for i in sorted(self.marked)] if self.marked else list(self.records)

    def cursor_record(self) -> dict | None:
        if not self.records or self.cursor_row >= len(self.records):
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return self.records[_record_index(row_key)]


def _record_index(row_key: RowKey) -> int:
    assert row_key.value is not None  # show() keys every row by its record's index
    return int(row_key.value)


def _text(value: object) -> str:
    return "" if value is None else str(value)


__all__ = ["MarkableTable", "key_label"]
