"""Two runs (or two groups of processes) compared, built once: per phase and for tokens/s, A and B, B/A with its
95% interval, processes per side, the verdict and its reason. `sysprof compare`, the Runs screen, a study's
"B against A" table and the report show these cells."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.profiler_core.base.units import NA, format_ms
from sysprof.profiler_core.tables.model import Column, TableModel, blank

COLUMNS = ("phase", "A", "B", "B/A [95% CI]", "n A/B", "verdict", "reason")
# Each row's display cells ride along under these keys, beside its raw numbers (which an export keeps).
TEXT_KEYS = ("a_text", "b_text", "ratio_text", "n_text", "verdict_cell")
COMPARE_COLUMNS = tuple(Column(key, label, blank, numeric=label in ("A", "B", "B/A [95% CI]", "n A/B"))
                        for key, label in zip(("phase", *TEXT_KEYS, "reason"), COLUMNS))


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


def compare_model(rows: Sequence[Mapping[str, Any]], title: str = "B against A",
                  notes: Sequence[str] = ()) -> TableModel:
    """compare's rows, each carrying its display cells beside its raw numbers."""
    shown = [dict(row) | dict(zip(TEXT_KEYS, row_cells(row)[1:6])) for row in rows]
    return TableModel("compare", title, COMPARE_COLUMNS, shown, tuple(notes))
