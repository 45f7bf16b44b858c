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
import itertools
import re

from rich.console import Console, OverflowMethod
from rich.errors import MarkupError
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

from sysprof.profiler_core.render.export import to_markdown

SHORTENED_COLUMN, SHORTENED_MIN = "kernel", 24  # the one column allowed to lose characters, and its least width
FORMATS = ("md", "csv")
WIDE = 100_000  # "no limit" for measuring and for a table printed into a pipe
INTEGER = re.compile(r"^-?[\d,]+$")
# a figure, with its spread or unit where it has them: "27.1", "4.42 ± 2.22", "306.99 ms", "1.50 [1.41–1.58]"
FIGURE = re.compile(r"^[-+]?[\d,]*\.?\d+(\s*(±|ms|µs|s|%|B|KiB|MiB|GiB|GB/s|TFLOP/s|×|\[).*)?$")


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


def plain(cell) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if not isinstance(cell, str):
        return str(cell)
    try:  # a str cell is printed as markup: its plain text is what shows
        return Text.from_markup(cell).plain
    except MarkupError:
        return cell


def table_cells(table: Table) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of a drawn table as the text it shows."""
    headers = [plain(column.header) for column in table.columns]
    columns = [[plain(cell) for cell in column.cells] for column in table.columns]
    return headers, [list(row) for row in zip(*columns)] if columns else []


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


# --- fitting a terminal's width ----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Need:
    least: int  # the width below which a number or word would be cut
    natural: int  # the width at which no cell wraps


def column_needs(console: Console, table: Table) -> list[Need]:
    options = console.options.update_width(WIDE)
    needs = []
    for column in table.columns:
        cells = [Measurement.get(console, options, cell) for cell in column.cells]
        header = Measurement.get(console, options, column.header)
        least = max([cell.minimum for cell in cells] + [header.minimum])
        natural = max([cell.maximum for cell in cells] + [header.minimum])
        texts = [plain(cell) for cell in column.cells]
        if plain(column.header) == SHORTENED_COLUMN:
            least = min(least, SHORTENED_MIN)
        elif column.no_wrap:  # neither its cells nor its header may wrap
            least = natural = max(natural, header.maximum)
        elif any(FIGURE.match(text) for text in texts):  # a figure stays on one line with its spread
            least = max([least] + [len(text) for text in texts if FIGURE.match(text)])
        needs.append(Need(least, max(natural, least)))
    return needs


def overhead(console: Console, table: Table, count: int) -> int:
    """Borders, separators and padding of a table of `count` columns like this one."""
    probe = copy.copy(table)
    probe.expand, probe.title, probe.caption = False, None, None
    probe.columns = [Column(header="", width=1, _index=index) for index in range(count)]
    return Measurement.get(console, console.options.update_width(WIDE), probe).maximum - count


def fit(console: Console, table: Table, width: int) -> list[Table | Text]:
    """The table as one or more tables none wider than width, no number cut (a number wider than the whole line
    beside its row's names folds onto a second line: split, never cut)."""
    if not table.columns or not table.row_count or \
            Measurement.get(console, console.options.update_width(WIDE), table).maximum <= width:
        return [table]
    needs = column_needs(console, table)
    every = list(range(len(table.columns)))
    if sum(needs[i].least for i in every) + overhead(console, table, len(every)) <= width:
        return [_laid_out(console, table, every, needs, width)]
    keys = row_keys(table, needs, width)
    widest = max(needs[i].least for i in every if i not in keys)
    if not keys or sum(needs[i].least for i in keys) + widest + overhead(console, table, len(keys) + 1) > width:
        table, needs, keys = _numbered(console, table, needs)  # no names that fit: a row number names each row
    groups = _groups(console, table, keys, needs, width)
    parts: list[Table | Text] = []
    for number, group in enumerate(groups, 1):
        columns = sorted(keys + group) if number == 1 else keys + group  # the first keeps the table's order
        part = _laid_out(console, table, columns, needs, width)
        part.title = None  # said on its own line: a narrow part would wrap it word by word
        parts += [_part_title(table.title, number, len(groups)), part]
    return parts


def row_keys(table: Table, needs: list[Need], width: int) -> list[int]:
    """The columns repeated in every column group: the fewest of the leading naming columns (names and whole
    numbers: model, ctx, rank; never a measurement) that tell every row apart; else the first of them."""
    _, rows = table_cells(table)
    naming = list(itertools.takewhile(lambda i: _names_rows([row[i] for row in rows]), range(len(table.columns) - 1)))
    for size in (1, 2, 3):
        for combo in itertools.combinations(naming, size):
            if sum(needs[i].least for i in combo) > width // 2:
                continue
            if len({tuple(row[i] for i in combo) for row in rows}) == len(rows):
                return list(combo)
    return naming[:1] if naming and needs[naming[0]].least <= width // 2 else []


def _names_rows(texts: list[str]) -> bool:
    """Whole numbers (ctx, rank) or names (model, phase): never a measurement."""
    return all(INTEGER.match(text) or not FIGURE.match(text) for text in texts)


def _groups(console, table: Table, keys: list[int], needs: list[Need], width: int) -> list[list[int]]:
    """The other columns in order, packed greedily into groups that fit beside the keys."""
    groups: list[list[int]] = [[]]
    for index in (i for i in range(len(table.columns)) if i not in keys):
        trial = keys + groups[-1] + [index]
        if groups[-1] and sum(needs[i].least for i in trial) + overhead(console, table, len(trial)) > width:
            groups.append([])
        groups[-1].append(index)
    return groups


def _laid_out(console, table: Table, indices: list[int], needs: list[Need], width: int) -> Table:
    """A copy of the table with these columns, each given a fixed width: its least, then as much of its natural
    width as the line has room for (the narrowest gaps filled first, so most columns read on one line)."""
    widths = {i: needs[i].least for i in indices}
    room = width - overhead(console, table, len(indices)) - sum(widths.values())
    for i in sorted(indices, key=lambda i: needs[i].natural - needs[i].least):
        grant = min(room, needs[i].natural - widths[i])
        widths[i] += max(grant, 0)
        room -= max(grant, 0)
    part = copy.copy(table)
    part.expand = False
    part.columns = [dataclasses.replace(table.columns[i], width=widths[i], min_width=None, max_width=None,
                                        ratio=None, _index=position, _cells=list(table.columns[i].cells),
                                        overflow=_overflow(table.columns[i]))
                    for position, i in enumerate(indices)]
    return part


def _overflow(column: Column) -> OverflowMethod:
    """Kernel names may be shortened with "…"; anything else folds onto the next line if it must: split, not cut."""
    return "ellipsis" if plain(column.header) == SHORTENED_COLUMN else "fold"


def _part_title(title, number: int, count: int) -> Text:
    """"TITLE (columns 1/3)": each part of a split table says which it is, on a line of its own."""
    base = title if isinstance(title, Text) else Text(plain(title) if title is not None else "")
    part = f"(columns {number}/{count})" if number == 1 else f"(continued, {number}/{count})"
    return Text.assemble(base.copy(), " ", part) if base.plain else Text(part)


def _numbered(console, table: Table, needs: list[Need]) -> tuple[Table, list[Need], list[int]]:
    """The table with a first column "#" numbering its rows, which every column group repeats."""
    numbered = copy.copy(table)
    numbers = Column(header="#", justify="right", _cells=[Text(str(i + 1)) for i in range(table.row_count)])
    numbered.columns = [numbers, *(dataclasses.replace(column, _index=index + 1)
                                   for index, column in enumerate(table.columns))]
    width = len(str(table.row_count))
    return numbered, [Need(max(width, 1), max(width, 1)), *needs], [0]
