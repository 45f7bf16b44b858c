"""Parser for the default `column` console format of `nsys stats`.

The console tables are fixed-width: a header line, a line of dash groups that
gives each column's exact span, then rows up to a blank line.  Slicing by those
spans is what keeps kernel names with spaces and commas intact.  Long names are
clipped by nsys with `…`; such tables get `attrs["names_clipped"] = True`.
"""

from __future__ import annotations

import re

import pandas as pd

from sysprof.profiler_core.kernels.nsys_stats.schema import frame_from_rows
from sysprof.profiler_core.kernels.nsys_stats.text import heading_report

# Two or more dash groups: a Markdown rule (`---`) has only one.
DASH_LINE = re.compile(r"^\s*-+(?:\s+-+)+\s*$")
_SIZE_HEADERS_WITHOUT_UNIT = {"Total", "Average", "Minimum", "Maximum"}


def parse_column_tables(text: str, source: str) -> list[tuple[str | None, pd.DataFrame]]:
    """Every fixed-width table in console text, with the report its heading names."""
    lines = text.splitlines()
    tables: list[tuple[str | None, pd.DataFrame]] = []
    report, title = None, ""
    for index, line in enumerate(lines):
        announced = heading_report(line)
        if announced:
            report, title = announced, line.strip()
        elif "SKIPPED:" in line and report and not _already_has(tables, report):
            tables.append((report, _empty_skipped(line)))
        elif DASH_LINE.match(line) and index > 0 and lines[index - 1].strip():
            frame = _table_at(lines, index, title, source)
            tables.append((report, frame))
            report, title = None, ""
    return tables


def _table_at(lines: list[str], dash_index: int, title: str, source: str) -> pd.DataFrame:
    starts = [m.start() for m in re.finditer(r"-+", lines[dash_index])]
    headers = _cells(lines[dash_index - 1], starts)
    if "(KiB)" in title:  # pre-2022 size table: the unit lives in the title only
        headers = [h + " (KiB)" if h in _SIZE_HEADERS_WITHOUT_UNIT else h for h in headers]
    rows = []
    for line in lines[dash_index + 1:]:
        if not line.strip() or line.startswith("```"):  # ``` closes a table pasted into Markdown
            break
        rows.append(_cells(line, starts))
    frame = frame_from_rows(headers, rows, source)
    frame.attrs["names_clipped"] = any(
        str(value).endswith("…") for column in ("name", "range") if column in frame for value in frame[column]
    )
    return frame


def _cells(line: str, starts: list[int]) -> list[str]:
    # Each cell runs to the next column's start; the two-space gutters are blank.
    bounds = starts[1:] + [len(line)]
    return [line[start:end].strip() for start, end in zip(starts, bounds)]


def _already_has(tables: list[tuple[str | None, pd.DataFrame]], report: str) -> bool:
    return any(name == report for name, _ in tables)


def _empty_skipped(line: str) -> pd.DataFrame:
    frame = pd.DataFrame()
    frame.attrs["skipped"] = line.strip()
    return frame
