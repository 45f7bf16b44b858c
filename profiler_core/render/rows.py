"""Any table of rows printed as a rich table: the one view the CLI's sweep, study and analysis tables share."""
from __future__ import annotations

from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from sysprof.profiler_core.base.units import significant
from sysprof.profiler_core.kernels.names import short_kernel_name
from sysprof.profiler_core.render.whole_tables import RecordsTable
from sysprof.profiler_core.tables.model import TableModel

KERNEL_COLUMN, NAME_WIDTH = "kernel", 40  # the cross-run kernel tables' name column, and its width on a line


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        # six significant digits below 100 (so 10.0001 and 10.0021 stay apart), two decimals above
        return significant(value) if abs(value) < 100 else f"{value:,.2f}"
    return str(value)


def print_rows(console, table, title: str, full_names: bool = False) -> None:
    """Any table (DataFrame or list of dicts) as a rich table, numbers right-aligned; a column empty in every
    row (memory on a CPU, say) is left out of the view, not of exports. A kernel column shows base names on one
    line each (full_names: whole), its exports the whole names."""
    from sysprof.profiler_core.render.export import table_records

    columns, records = table_records(table)
    columns = [c for c in columns if any(r.get(c) is not None for r in records)] if records else columns
    view = RecordsTable(title=title, title_justify="left",
                        records=[[record.get(column) for column in columns] for record in records])
    for column in columns:
        numeric = any(isinstance(r.get(column), (int, float)) and not isinstance(r.get(column), bool) for r in records)
        names = column == KERNEL_COLUMN and not full_names
        view.add_column(str(column), justify="right" if numeric else "left", no_wrap=names, overflow="ellipsis",
                        max_width=NAME_WIDTH if names else None)
    for record in records:
        view.add_row(*(Text(_cell(_shown(column, record.get(column), full_names))) for column in columns))
    console.print(view)


def _shown(column: str, value, full_names: bool):
    return short_kernel_name(value) if column == KERNEL_COLUMN and isinstance(value, str) and not full_names else value


def paint_model(model: TableModel, compact: bool = False) -> Table:
    """A built table drawn: with its title and a box (the CLI), or compact without either (a pane, which has its
    own title). Every column keeps the width of its widest cell, so no number is cut in 80 columns, but a last
    column of free text (kernel classes, a note), which wraps in the CLI and is cut with … in a pane. Cells are Text: a
    kernel or module name is never taken for markup."""
    raw = [[row.get(column.key) for column in model.columns] for row in model.rows]
    view = (RecordsTable(box=None, padding=(0, 1), show_edge=False, header_style="bold", records=raw) if compact
            else RecordsTable(title=Text(model.title), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                              records=raw))
    cells = [model.cells(row) for row in model.rows]
    for index, column in enumerate(model.columns):
        last = index == len(model.columns) - 1
        widest = max([len(row[index]) for row in cells] + [len(word) for word in column.label.split()])
        justify: Literal["right", "left"] = "right" if column.numeric else "left"
        if compact and last:
            view.add_column(WholeItems(column.label), justify=justify)  # wrappable, so rich narrows it to fit
        elif compact:
            view.add_column(column.label, justify=justify, no_wrap=True, min_width=max(widest, len(column.label)))
        elif column.numeric or not last:  # as wide as its widest cell, the header folding at its spaces
            view.add_column(column.label, justify=justify, width=widest)
        else:  # the rest of the line, wrapping at spaces, never narrower than its longest word
            words = [len(word) for row in cells for word in row[index].split()]
            view.add_column(column.label, justify=justify, min_width=max(words + [len(column.label.split()[0])]))
    for row in cells:
        view.add_row(*(Text(cell) for cell in row[:-1]), WholeItems(row[-1]) if compact else Text(row[-1]))
    return view


class WholeItems:
    """Free text in the width a table gives it: whole items, then "…" for those left out. An item is the words up to
    the next one with a digit ("elementwise 12%"), so a name keeps its number and no number is cut in two; words after
    the last number (free text, a header) are items each (rich crops a cell that does not fit with no mark at all:
    it showed "elementwise 12%" as "element")."""

    def __init__(self, text: str):
        self.items: list[str] = []
        pending: list[str] = []
        for word in text.split():
            pending.append(word)
            if any(character.isdigit() for character in word):
                self.items.append(" ".join(pending))
                pending = []
        self.items += pending

    def fitted(self, width: int) -> str:
        shown: list[str] = []
        for index, item in enumerate(self.items):
            more = index < len(self.items) - 1
            if cell_len(" ".join([*shown, item])) + (2 if more else 0) > width:
                return " ".join([*shown, "…"])
            shown.append(item)
        return " ".join(shown)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        whole = cell_len(" ".join(self.items))
        first = cell_len(self.items[0]) + (2 if len(self.items) > 1 else 0) if self.items else 0  # "gemm 79% …"
        return Measurement(min(whole, first), whole)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown, first = self.fitted(options.max_width), self.items[0] if self.items else ""
        if shown == "…" and first and max(map(cell_len, first.split())) <= options.max_width:
            # not even one item fits on a line, but each of its words does: the first item wraps, whole, over lines
            yield Text(first + (" …" if len(self.items) > 1 else ""))
        else:
            yield Text(shown, no_wrap=True, overflow="crop")


def print_model(console, model: TableModel) -> None:
    """The CLI's painter: the table, then its notes (findings) below it."""
    console.print(paint_model(model))
    for note in model.notes:
        console.print(Text(note, style="yellow"))
