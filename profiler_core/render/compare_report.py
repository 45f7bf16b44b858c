"""`sysprof compare` as text: one line per phase (and tokens/s) with B/A, its 95% interval, processes per side, the
verdict and its reason. Plain columns, never wrapped, so a row stays one line in a log; in a terminal narrower than
the lines, each reason goes on a line of its own below its row."""
from __future__ import annotations

from collections.abc import Sequence

from sysprof.profiler_core.tables.compare_tables import COLUMNS, row_cells

REASON_INDENT = "    "


def compare_lines(rows: list[dict], title: str, notes: Sequence[str] = (), reasons_below: bool = False) -> list[str]:
    """The title, any notes, a header and one left-aligned, space-padded line per row; reasons_below: each row's
    reason on an indented line of its own (a narrow terminal), not in a last column."""
    columns = COLUMNS[:-1] if reasons_below else COLUMNS
    table = [list(columns), *(row_cells(row)[:len(columns)] for row in rows)]
    reasons = ["", *(row.get("reason") or "" for row in rows)]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(columns) - 1)]
    lines = [title, *notes]
    for cells, reason in zip(table, reasons):
        padded = [cell.rjust(width) if 0 < i < 4 else cell.ljust(width) for i, (cell, width) in
                  enumerate(zip(cells, widths))]
        lines.append("  ".join([*padded, cells[-1]]).rstrip())
        if reasons_below and reason:
            lines.append(REASON_INDENT + reason)
    return lines


RAW_COLUMNS = ("phase", "unit", "A median", "B median", "B/A", "CI low", "CI high", "n A", "n B", "verdict",
               "reason")


def parsed_table(rows: list[dict], title: str, raw: bool):
    """compare's rows for --format: the cells as printed (md), or each number a value of its own (csv)."""
    from sysprof.profiler_core.render.whole_tables import RecordsTable

    if not raw:
        table = RecordsTable(*COLUMNS, title=title)
        for row in rows:
            table.add_row(*row_cells(row))
        return table
    records = [[row["phase"], row.get("unit", "ms"), row.get("a_median"), row.get("b_median"),
                row.get("ratio_b_over_a"), row.get("ci_low"), row.get("ci_high"), row.get("n_a", 1), row.get("n_b", 1),
                row.get("verdict_text") or row["verdict"], row.get("reason") or ""] for row in rows]
    table = RecordsTable(*RAW_COLUMNS, title=title, records=records)
    for record in records:
        table.add_row(*("" if value is None else str(value) for value in record))
    return table


def print_compare(console, rows: list[dict], title: str, notes: Sequence[str] = ()) -> None:
    """Plain lines, never wrapped, in a pipe or file and wherever they fit; in a narrower terminal each reason goes
    on its own line below its row (wrapped at spaces); a table to parse with --format."""
    lines = compare_lines(rows, title, notes)
    if getattr(console, "table_format", None):
        console.print(parsed_table(rows, title, raw=console.table_format == "csv"))
        for note in notes:  # the console sends them to stderr: stdout stays the table a log parser reads
            console.print(note, markup=False, highlight=False, soft_wrap=True)
        return
    if not (console.is_terminal and max(map(len, lines)) > console.width):
        for line in lines:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    from rich.padding import Padding
    from rich.text import Text

    for line in compare_lines(rows, title, notes, reasons_below=True):
        reason = line.startswith(REASON_INDENT)  # wrapped lines keep the indent
        console.print(Padding(Text(line.strip()), (0, 0, 0, len(REASON_INDENT))) if reason else Text(line),
                      highlight=False)
