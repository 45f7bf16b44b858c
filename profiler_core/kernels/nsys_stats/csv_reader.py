"""Version-tolerant reading of `nsys stats` output files.

`read_stats_csv` takes what `nsys stats --format csv --output PREFIX` writes, and
also stdout captured into a file (messages around the tables) and the default
console `column` format.  nsys's CSV is not RFC 4180: a value is quoted only when
it holds a comma and inner quotes are not escaped, so the csv module mis-splits
kernel names; `split_stats_csv_line` knows that text sits in the first or last
column.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sysprof.profiler_core.base.errors import KernelReportError, StatsSetError
from sysprof.profiler_core.kernels.nsys_stats.columns import DASH_LINE, parse_column_tables
from sysprof.profiler_core.kernels.nsys_stats.schema import (
    REPORT_ALIASES,
    canonical_report_name,
    frame_from_rows,
    normalize_header,
    report_from_filename,
)
from sysprof.profiler_core.kernels.nsys_stats.text import heading_report, is_message_line, nsys_output_errors

_HEADER_MARKERS = {"time_pct", "total_ns", "total_bytes", "name", "range", "style", "pid", "tid",
                   "start_ns", "instances", "calls", "count"}


def read_stats_csv(path: str | Path, report: str | None = None) -> pd.DataFrame:
    """One report's table, normalized (see stats_schema); empty if nsys skipped it.

    `report` picks a table when the file holds several (a console capture);
    otherwise the first table is returned.  `attrs["report"]` names the report.
    """
    path = Path(path)
    tables = read_stats_tables(path)
    if report is None:
        return next(iter(tables.values()))
    wanted = canonical_report_name(report) or report
    if wanted in tables:
        return _with_columns(tables[wanted], wanted, path)
    if list(tables) == ["unknown"]:  # nothing in the file names its report
        return _with_columns(tables["unknown"], wanted, path)
    raise KernelReportError(f"{path}: no '{report}' table in this file (found: {', '.join(tables)})")


# The columns the kernel tables read from each report (normalized names, stats_schema): a header damaged or renamed
# by hand is said here, naming the file, not found later as a KeyError.
NEEDED_COLUMNS = {"cuda_gpu_kern_sum": ("name", "total_ns", "instances"),
                  "nvtx_kern_sum": ("total_ns",)}


def _with_columns(frame: pd.DataFrame, report: str, path: Path) -> pd.DataFrame:
    missing = [column for column in NEEDED_COLUMNS.get(report, ()) if len(frame) and column not in frame.columns]
    if missing:
        raise KernelReportError(f"{path}: the {report} table has no {', '.join(map(repr, missing))} column "
                                f"(columns: {', '.join(map(str, frame.columns))}); is the file damaged?")
    return frame


def read_stats_tables(path: str | Path) -> dict[str, pd.DataFrame]:
    """Every table in an nsys stats file, keyed by canonical report name."""
    path = Path(path)
    text = _read_text(path)
    default_report = report_from_filename(path.name) or "unknown"
    if not text.strip():
        return {default_report: _empty_frame(default_report, "empty file")}
    errors = nsys_output_errors(text)
    if _looks_like_column_format(text):
        found = parse_column_tables(text, str(path))
    else:
        found = _parse_csv_tables(text.splitlines(), str(path))
    if not found:
        return _no_tables(path, text, errors, default_report)
    tables: dict[str, pd.DataFrame] = {}
    for name, frame in found:
        name = name or default_report
        frame.attrs["report"] = name
        tables.setdefault(name, frame)
    return tables


def split_stats_csv_line(line: str, field_count: int) -> list[str]:
    """Split one nsys CSV row into exactly `field_count` fields.

    A quoted field ends at the first `",` (nsys does not escape inner quotes), and
    the last field is the rest of the line, so a kernel name is never split.
    """
    fields, position = [], 0
    for index in range(field_count - 1):
        if line.startswith('"', position):
            end = line.find('",', position + 1)
            fields.append(line[position + 1:end] if end >= 0 else "")
            position = end + 2 if end >= 0 else -1
        else:
            end = line.find(",", position)
            fields.append(line[position:end] if end >= 0 else "")
            position = end + 1 if end >= 0 else -1
        if position < 0:
            raise ValueError(f"{index + 1} fields where the header has {field_count}")
    last = line[position:]
    fields.append(last[1:-1] if len(last) >= 2 and last[0] == last[-1] == '"' else last)
    return fields


def find_report_file(stats_dir: str | Path, report: str, prefix: str | None = None) -> Path | None:
    """The CSV for `report` in one stats set of a directory, under its new or its old name.

    A set is the files one `nsys stats --output PREFIX` wrote: `PREFIX_cuda_gpu_kern_sum.csv`, legacy
    `PREFIX_gpukernsum.csv`, or bare `cuda_gpu_kern_sum.csv` (prefix ""). prefix None: the directory's only set;
    a directory holding several is refused (StatsSetError) rather than read as a mix of runs.
    """
    if prefix is None:
        prefix = only_stats_set(stats_dir)
        if prefix is None:
            return None
    canonical = canonical_report_name(report) or report
    for name in (canonical, *REPORT_ALIASES.get(canonical, ())):
        path = Path(stats_dir) / (f"{prefix}_{name}.csv" if prefix else f"{name}.csv")
        if path.is_file():
            return path
    return None


def stats_sets(stats_dir: str | Path) -> list[str]:
    """The prefixes of the stats sets in a directory ("" for files named by their report alone)."""
    names = sorted((n for c, olds in REPORT_ALIASES.items() for n in (c, *olds)), key=len, reverse=True)
    prefixes = set()
    for path in Path(stats_dir).glob("*.csv"):
        for name in names:  # longest first, so `nvtx_pushpop_sum` is not read as a set ending in `nvtx_sum`
            if path.name == f"{name}.csv" or path.name.endswith(f"_{name}.csv"):
                prefixes.add(path.name[:-len(f"{name}.csv")].removesuffix("_"))
                break
    return sorted(prefixes)


def only_stats_set(stats_dir: str | Path) -> str | None:
    """The directory's one stats set; None without any; StatsSetError with several."""
    sets = stats_sets(stats_dir)
    if len(sets) > 1:
        named = ", ".join(repr(prefix) if prefix else "'' (no prefix)" for prefix in sets)
        raise StatsSetError(f"{stats_dir} holds {len(sets)} sets of nsys stats ({named}); name one with --prefix")
    return sets[0] if sets else None


def _parse_csv_tables(lines: list[str], source: str) -> list[tuple[str | None, pd.DataFrame]]:
    tables, report, index = [], None, 0
    while index < len(lines):
        line = lines[index]
        announced = heading_report(line)
        if announced:
            report = announced
        elif not is_message_line(line) and _is_csv_header(line):
            frame, index = _csv_table_at(lines, index, source)
            tables.append((report, frame))
            report = None
            continue
        index += 1
    return tables


def _csv_table_at(lines: list[str], header_index: int, source: str) -> tuple[pd.DataFrame, int]:
    headers = split_stats_csv_line(lines[header_index], lines[header_index].count(",") + 1)
    rows, index = [], header_index + 1
    while index < len(lines) and lines[index].strip() and not is_message_line(lines[index]):
        try:
            rows.append(split_stats_csv_line(lines[index], len(headers)))
        except ValueError as error:
            raise KernelReportError(f"{source}: line {index + 1}: {error}") from None
        index += 1
    return frame_from_rows(headers, rows, source), index


def _is_csv_header(line: str) -> bool:
    if line.count(",") < 1:
        return False
    names = {normalize_header(cell)[0] for cell in line.split(",")}
    return len(names & _HEADER_MARKERS) >= 2


def _looks_like_column_format(text: str) -> bool:
    for line in text.splitlines():
        if DASH_LINE.match(line):
            return True
        if not is_message_line(line) and _is_csv_header(line):
            return False
    return False


def _no_tables(path: Path, text: str, errors: list[str], report: str) -> dict[str, pd.DataFrame]:
    if errors:
        raise KernelReportError(f"{path}: nsys reported {errors[0]}")
    skipped: dict[str, pd.DataFrame] = {}
    for line in text.splitlines():
        if "SKIPPED:" in line:
            name = heading_report(line) or report
            skipped.setdefault(name, _empty_frame(name, line.strip()))
    if skipped:
        return skipped
    raise KernelReportError(f"{path}: no nsys stats table found")


def _empty_frame(report: str, reason: str) -> pd.DataFrame:
    frame = pd.DataFrame()
    frame.attrs.update(report=report, skipped=reason)
    return frame


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise KernelReportError(f"{path}: cannot read ({error.strerror or error})") from None
    if b"\x00" in data[:4096]:
        raise KernelReportError(f"{path}: binary file, not nsys stats output")
    return data.decode("utf-8", errors="replace")
