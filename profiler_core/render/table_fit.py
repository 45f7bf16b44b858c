"""Fitting a table into a terminal's width without cutting a number: each column gets the width its cells need
(text wraps at spaces, a number and its spread stay on one line); a table still too wide is split into column
groups, each repeating the columns that name a row. WholeTablesConsole (whole_tables.py) prints what this lays out.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import re

from rich.console import Console, OverflowMethod
from rich.errors import MarkupError
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

SHORTENED_COLUMN, SHORTENED_MIN = "kernel", 24  # the one column allowed to lose characters, and its least width
WIDE = 100_000  # "no limit" for measuring and for a table printed into a pipe
INTEGER = re.compile(r"^-?[\d,]+$")
# a figure, with its spread or unit where it has them: "27.1", "4.42 ± 2.22", "306.99 ms", "1.50 [1.41–1.58]"
FIGURE = re.compile(r"^[-+]?[\d,]*\.?\d+(\s*(±|ms|µs|s|%|B|KiB|MiB|GiB|GB/s|TFLOP/s|×|\[).*)?$")


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
