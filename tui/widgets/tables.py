"""DataTables that never cut a cell at the view's edge, one of records whose rows can be marked (space), and the
line under it that shows the highlighted row's cells the view leaves out."""
from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.strip import Strip
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowKey

from sysprof.profiler_core.base.units import Formatter
from sysprof.profiler_core.tables.model import TableModel
from sysprof.tui.keys import key_label

MARK = "✓"
MORE_LEFT, MORE_RIGHT = "‹", "›"  # where a column the view cuts was blanked: more columns that way


class WholeCellsTable(DataTable):
    """A DataTable that never shows part of a cell at the view's edges."""

    def render_line(self, y: int) -> Strip:
        """The line as DataTable draws it, less any column the view's edge cuts: a number cut off at the edge
        reads as another number ("1234.5" as "1234" or "34.5"), so a cut column is blank until scrolled into view.
        (The app's tables have no fixed columns and no row labels, which DataTable draws outside the scrolled part.)"""
        line = super().render_line(y)
        header = 1 if self.show_header else 0
        if self.fixed_columns or (y >= header and y - header + self.scroll_offset.y >= self.row_count):
            return line  # below the last row (row_count is current; the virtual size waits for the next idle pass)
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        view = self.scrollable_content_region.width  # the line runs on under a vertical scrollbar: not seen
        return blank_cut_columns(line, widths, self.scroll_offset.x, view, self.cell_padding)


class MarkableTable(WholeCellsTable):
    """Shows a list of dicts; keeps the records so export gets raw values, not the formatted text."""

    BINDINGS = [Binding("space", "toggle_mark", "Mark")]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.records: list[dict] = []
        self.marked: set[int] = set()
        self.on_view_resized: list[Callable[[], None]] = []  # who shows what this table's view leaves out

    def on_resize(self) -> None:
        for follower in self.on_view_resized:
            follower()

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

    def show_model(self, model: TableModel, widths: dict[str, int] | None = None) -> None:
        """A table built in the core (tables/): its columns, its rows, each cell as the model reads it."""
        self.show({column.key: column.label for column in model.columns}, [dict(row) for row in model.rows],
                  {column.key: column.text for column in model.columns}, widths)

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

    def cells_out_of_view(self) -> list[tuple[str, str]]:
        """(header, cell) of the highlighted row's columns the view does not show whole (past an edge, or blanked
        there), in column order."""
        if not self.records or self.cursor_row >= self.row_count:
            return []
        columns = self.ordered_columns
        widths = [column.get_render_width(self) for column in columns]
        hidden = columns_out_of_view(widths, self.scroll_offset.x, self.scrollable_content_region.width,
                                     self.cell_padding)
        cells = self.get_row_at(self.cursor_row)
        return [(columns[index].label.plain, str(cells[index])) for index in hidden
                if columns[index].key.value != "mark" and str(cells[index]).strip()]


class OutOfViewCells(Static):
    """Under a MarkableTable: the highlighted row's cells that its view leaves out, so that a row can be read whole
    in 80 columns without scrolling (the advisor's reason a candidate was not run sat far right); whole cells in at
    most MAX_LINES lines, then "…", so the table keeps its rows; hidden when the view shows every cell."""

    DEFAULT_CSS = """
    OutOfViewCells { height: auto; color: $text-muted; }
    OutOfViewCells.-empty { display: none; }
    """
    MAX_LINES = 2

    def __init__(self, table_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table_id = table_id
        self.pending = False
        self.shown: Text | None = None  # the text on show, once shown

    def on_mount(self) -> None:
        table = self.table
        for attribute in ("cursor_coordinate", "scroll_x", "virtual_size", "show_vertical_scrollbar"):
            self.watch(table, attribute, lambda _: self.schedule(), init=False)
        table.on_view_resized.append(self.schedule)
        self.schedule()

    @property
    def table(self) -> MarkableTable:
        return self.screen.query_one(f"#{self.table_id}", MarkableTable)

    def schedule(self) -> None:
        """Once after the next refresh, however many changes come before it (adding rows moves the cursor each
        time): the table's sizes are settled then."""
        if not self.pending:
            self.pending = True
            self.call_after_refresh(self.show_cells)

    def show_cells(self) -> None:
        self.pending = False
        parts = [Text.assemble((f"{label}:", "bold"), " ", cell) for label, cell in self.table.cells_out_of_view()]
        width = getattr(self.parent, "content_size", Size(0, 0)).width  # the line's own is 0 while it is hidden
        text = fitted_lines(parts, width, self.MAX_LINES, self.app.console)
        if text == self.shown:
            return
        self.shown = text
        self.set_class(not text.plain, "-empty")
        self.update(text)


def fitted_lines(parts: list[Text], width: int, lines: int, console: Console) -> Text:
    """parts joined by " · ": as many whole ones as wrap into lines at width, then "…" where some are left out."""
    if not parts or width <= 0:
        return Text()
    for count in range(len(parts), 0, -1):
        text = Text(" · ").join([*parts[:count], *([Text("…")] if count < len(parts) else [])])
        if len(text.wrap(console, width)) <= lines:
            return text
    return Text("…")


def blank_cut_columns(line: Strip, widths: list[int], left: int, width: int, pad: int = 1) -> Strip:
    """line shows the table's columns (these render widths, pad cells each side of the text) from x = left, width
    cells of them: a column whose text the left or the right edge cuts becomes blank with an arrow that says more is
    there (an edge in a column's padding cuts nothing). A column wider than the whole view stays as it is."""
    right = left + width
    for start, end in zip([0, *accumulate(widths)], accumulate(widths), strict=False):
        if start < left and end > right:
            continue
        if start + pad < left < end - pad:
            line = _blank(line, 0, end - left, MORE_LEFT + " " * (end - left - 1))
        elif start + pad < right < end - pad:
            line = _blank(line, start - left, width, " " * (right - start - 1) + MORE_RIGHT)
    return line


def columns_out_of_view(widths: list[int], left: int, width: int, pad: int = 1) -> list[int]:
    """The columns (by index) whose text the view of width cells from x = left does not show whole; a column wider
    than the view is shown as it is, so it counts as seen."""
    if width <= 0:  # not laid out yet, or hidden: nothing is seen, nothing to show under it either
        return []
    right = left + width
    return [index for index, (start, end) in enumerate(zip([0, *accumulate(widths)], accumulate(widths), strict=False))
            if not (start < left and end > right) and (start + pad < left or end - pad > right)]


def _blank(line: Strip, x1: int, x2: int, text: str) -> Strip:
    """line with cells x1..x2 replaced by text, in the style the first replaced cell had."""
    first = next(iter(line.crop(x1, x1 + 1)), None)
    style = first.style if first else None
    return Strip.join([line.crop(0, x1), Strip([Segment(text, style)], x2 - x1), line.crop(x2, line.cell_length)])


def _record_index(row_key: RowKey) -> int:
    assert row_key.value is not None  # show() keys every row by its record's index
    return int(row_key.value)


def _text(value: object) -> str:
    return "" if value is None else str(value)


__all__ = ["MarkableTable", "OutOfViewCells", "WholeCellsTable", "blank_cut_columns", "columns_out_of_view",
           "key_label"]
