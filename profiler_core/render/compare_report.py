"""`sysprof compare` as text: one line per phase (and tokens/s) with B/A, its 95% interval, processes per side, the
verdict and its reason. Plain columns, never wrapped, so a row stays one line however narrow the terminal."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.profiler_core.units import NA, format_ms

COLUMNS = ("phase", "A", "B", "B/A [95% CI]", "n A/B", "verdict", "reason")


def value_text(value: float | None, unit: str) -> str:
    if value is None:
        return NA
    return format_ms(value) if unit == "ms" else f"{value:,.0f}"  # a rate: the row's name says its unit


def ratio_text(row: Mapping[str, Any]) -> str:
    """0.93 [0.91–0.95]: the ratio of medians with its bootstrap interval (none with one process on a side)."""
    ratio = row.get("ratio_b_over_a")
    if ratio is None:
        return NA
    low, high = row.get("ci_low"), row.get("ci_high")
    return f"{ratio:.2f}" + ("" if low is None or high is None else f" [{low:.2f}–{high:.2f}]")


def row_cells(row: Mapping[str, Any]) -> list[str]:
    """The cells of COLUMNS for one compare row."""
    unit = row.get("unit", "ms")
    return [row["phase"], value_text(row.get("a_median"), unit), value_text(row.get("b_median"), unit),
            ratio_text(row), f"{row.get('n_a', 1)}/{row.get('n_b', 1)}", row.get("verdict_text") or row["verdict"],
            row.get("reason") or ""]


def compare_lines(rows: list[dict], title: str, notes: Sequence[str] = ()) -> list[str]:
    """The title, any notes, a header and one left-aligned, space-padded line per row."""
    table = [list(COLUMNS), *(row_cells(row) for row in rows)]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(COLUMNS) - 1)]
    lines = [title, *notes]
    for cells in table:
        padded = [cell.rjust(width) if 0 < i < 4 else cell.ljust(width) for i, (cell, width) in
                  enumerate(zip(cells, widths))]
        lines.append("  ".join([*padded, cells[-1]]).rstrip())
    return lines


def print_compare(console, rows: list[dict], title: str, notes: Sequence[str] = ()) -> None:
    for line in compare_lines(rows, title, notes):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
