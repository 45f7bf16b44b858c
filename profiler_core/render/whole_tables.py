"""Tables that read whole wherever they are printed: no number is ever cut to "…".

- Not a terminal (a pipe, a file, a batch log): each table at its natural width, however wide.
- A terminal narrower than a table: columns get the widths their cells need (text wraps at spaces, a number and
  its spread stay on one line); if even that is too wide, the table is split into column groups, each repeating
  the columns that name a row (model and ctx, say; a row number where they would leave no room), so every group
  reads on its own. Only a number wider than the line beside its row's number folds onto a second line: split,
  never cut.
- `--format md|csv`: every table as a Markdown pipe table or CSV, for logs meant to be parsed; stdout then holds
  only the tables, and every other line goes to stderr.

Only kernel names may be shortened (they have --full-names); their column gives up width first.
"""
from __future__ import annotations

import copy
import csv
import dataclasses
import io

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from sysprof.profiler_core.render.export import to_markdown
from sysprof.profiler_core.render.table_fit import WIDE, fit, plain, table_cells

FORMATS = ("md", "csv")


class WholeTablesConsole(Console):
    """A rich Console whose print() lays tables out so that no number is cut (see the module's docstring)."""

    def __init__(self, table_format: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.table_format = table_format

    def print(self, *objects, **kwargs) -> None:
        if len(objects) != 1 or not isinstance(objects[0], Table):
            if self.table_format:  # stdout holds only the tables to parse; lines of prose go to stderr
                Console(stderr=True, highlight=False).print(*objects, **kwargs)
            else:
                super().print(*objects, **kwargs)
            return
        table = literal(objects[0]) if kwargs.get("markup") is False else objects[0]
        if self.table_format:
            self.file.write(table_text(table, self.table_format))
            self.file.flush()
        elif not self.is_terminal:
            self._print_at_natural_width(table, **kwargs)
        else:
            for part in fit(self, table, self.width):
                super().print(part, **kwargs)

    def _print_at_natural_width(self, table: Table, **kwargs) -> None:
        if not table.row_count:  # rich measures a column without cells as wide as it is allowed to be
            super().print(table, **kwargs)
            return
        table = copy.copy(table)
        table.expand = False
        natural = Measurement.get(self, self.options.update_width(WIDE), table).maximum
        kept, self.width = self.width, max(natural, self.width)
        try:
            super().print(table, **kwargs)
        finally:
            self.width = kept


def output_console(args=None) -> WholeTablesConsole:
    """The CLI's stdout console; `--format md|csv` (where a command has it) prints tables as text to parse."""
    return WholeTablesConsole(getattr(args, "format", None))


def add_format_option(parser) -> None:
    parser.add_argument("--format", choices=FORMATS,
                        help="print every table as Markdown or CSV (for logs to parse) instead of drawn")


# --- plain text of a drawn table -------------------------------------------------------------------------------

def literal(table: Table) -> Table:
    """A copy whose str cells and headers are Text: printed with markup=False, "[attn]" is text, not a style."""
    def text(cell):
        return Text(cell) if isinstance(cell, str) else cell

    copied = copy.copy(table)
    copied.columns = [dataclasses.replace(column, header=text(column.header),
                                          _cells=[text(cell) for cell in column.cells]) for column in table.columns]
    return copied


class RecordsTable(Table):
    """A drawn table that also carries its rows' raw values, so that --format csv writes 27123.456, not the
    "27,123.456" the screen shows."""

    def __init__(self, *args, records: list[list] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = records  # one list per row, a value per column, in the columns' order


def table_text(table: Table, table_format: str) -> str:
    headers, rows = table_cells(table)
    if table_format == "csv" and isinstance(table, RecordsTable) and table.records is not None:
        rows = [["" if value is None else value for value in record] for record in table.records]
    title = plain(table.title) if table.title is not None else ""
    if table_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerows([headers, *rows])
        return (f"# {title}\n" if title else "") + buffer.getvalue() + "\n"
    records = [dict(zip(headers, row)) for row in rows] or [dict.fromkeys(headers, "")]
    heading = f"**{title}**\n\n" if title else ""
    return heading + to_markdown(records) + "\n"
