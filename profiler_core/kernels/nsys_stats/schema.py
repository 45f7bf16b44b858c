"""Normalized column names and units for `nsys stats` tables.

nsys renamed its columns over the years (`Time(%)`/`Average` in 2021, `Time (%)`/
`Avg (ns)`/`Med (ns)` from 2022) and its reports (`gpukernsum` became
`cuda_gpu_kern_sum`).  Every parser in this package funnels its raw header strings
and cell strings through `frame_from_rows`, so downstream code sees one schema:
times in `*_ns`, sizes in `*_bytes`, percentages in `*_pct`, text in `name` /
`range` / `style`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded when a table is built: the session imports report names from here
    import pandas as pd

from sysprof.profiler_core.base.errors import KernelReportError

# Canonical report name -> older names nsys used for the same report.
REPORT_ALIASES: dict[str, tuple[str, ...]] = {
    "cuda_gpu_kern_sum": ("gpukernsum",),
    "cuda_api_sum": ("cudaapisum",),
    "cuda_gpu_mem_time_sum": ("gpumemtimesum",),
    "cuda_gpu_mem_size_sum": ("gpumemsizesum",),
    "cuda_kern_exec_sum": ("kernexecsum",),
    "nvtx_sum": ("nvtxsum", "nvtxppsum"),
    "nvtx_pushpop_sum": (),
    "nvtx_kern_sum": ("nvtxkernsum",),
    "nvtx_gpu_proj_sum": (),
    "nvtx_pushpop_trace": (),
    "osrt_sum": ("osrtsum",),
}

_WHOLE_HEADER_NAMES = {
    "num calls": "calls",
    "operations": "count",
    "operation": "name",
    "kernel name": "name",
    "nvtx range": "range",
    "kern inst": "instances",
    "nvtx inst": "range_instances",
    "range instances": "range_instances",
    "devid": "device_id",
    "total gpu ops": "gpu_ops",
}
_BASE_RENAMES = {
    "total_time": "total", "average": "avg", "minimum": "min", "maximum": "max",
    "median": "med", "stddev": "std", "total_proj_time": "proj_total",
    "total_range_time": "range_total", "proj_stddev": "proj_std",
}
# Before 2022 the statistics columns carried no unit; nsys documented them as ns.
_UNITLESS_TIME_BASES = {"total", "avg", "med", "min", "max", "std"}
_BYTES_PER_UNIT = {"B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1 << 20, "GB": 1e9, "GiB": 1 << 30}
# Columns that must parse as numbers; anything else that fails stays text, so a
# new text column in a future nsys does not break reading.
_REQUIRED_NUMERIC = re.compile(r"(_ns|_pct|_bytes|^instances|^calls|^count)$")
_TEXT_COLUMNS = {"name", "range", "style", "api_name", "rangestack", "nametree"}
_RANGE_DOMAIN = re.compile(r"^([^:\s]*):(?!:)(.*)$", re.S)
_NULL_CELLS = {"", "None", "nan", "NaN", "-"}


def canonical_report_name(name: str) -> str | None:
    """`gpukernsum` -> `cuda_gpu_kern_sum`; unknown names -> None."""
    if name in REPORT_ALIASES:
        return name
    for canonical, old_names in REPORT_ALIASES.items():
        if name in old_names:
            return canonical
    return None


def report_from_filename(filename: str) -> str | None:
    """Report named by a stats file (`PREFIX_cuda_gpu_kern_sum.csv`, `gpukernsum.csv`)."""
    stem = re.sub(r"\.(csv|txt|log)$", "", filename)
    candidates = [(n, c) for c, olds in REPORT_ALIASES.items() for n in (c, *olds)]
    # Longest first, so `nvtx_pushpop_sum` is not taken for a shorter name.
    for name, canonical in sorted(candidates, key=lambda nc: -len(nc[0])):
        if re.search(rf"(^|_){name}(_|$)", stem):
            return canonical
    return None


def normalize_header(header: str) -> tuple[str, float]:
    """Raw column header -> (normalized name, factor that converts values to ns/bytes)."""
    text = header.strip().strip('"')
    if text.lower() in _WHOLE_HEADER_NAMES:
        return _WHOLE_HEADER_NAMES[text.lower()], 1
    unit_match = re.fullmatch(r"(.*?)\s*\(([^)]*)\)", text)
    base, unit = (unit_match.group(1), unit_match.group(2)) if unit_match else (text, None)
    base = re.sub(r"[^0-9a-z]+", "_", base.lower()).strip("_")
    base = _BASE_RENAMES.get(base, base)
    if unit is None and base in _UNITLESS_TIME_BASES:
        unit = "ns"
    if unit == "ns":
        return f"{base}_ns", 1
    if unit == "%":
        return f"{base}_pct", 1
    if unit in _BYTES_PER_UNIT:
        return f"{base}_bytes", _BYTES_PER_UNIT[unit]
    return base, 1


def split_range_domain(raw: str) -> tuple[str, str | None]:
    """`:forward` -> ("forward", ""); `dom:x` -> ("x", "dom"); `aten::mm` stays whole.

    nsys 2024.x prints NVTX ranges as `domain:name`, with an empty domain for the
    default one.  A `::` right after the prefix is a C++ scope, not a domain.
    """
    match = _RANGE_DOMAIN.match(raw)
    if not match:
        return raw, None
    return match.group(2), match.group(1)


def frame_from_rows(headers: list[str], rows: list[list[str]], source: str) -> pd.DataFrame:
    """Build a normalized DataFrame from raw header and cell strings."""
    import pandas as pd

    normalized = [normalize_header(h) for h in headers]
    names = _dedupe([name for name, _ in normalized])
    frame = pd.DataFrame(rows, columns=names, dtype=object)
    clipped_cells = 0
    for name, (_, scale) in zip(names, normalized):
        if name in _TEXT_COLUMNS:
            frame[name] = frame[name].astype("str")
            continue
        # The console format clips even numbers that overflow their column (`1798260…`).
        clipped = frame[name].astype(str).str.endswith("…")
        clipped_cells += int(clipped.sum())
        frame[name] = _to_number(frame[name].mask(clipped, ""), name, scale, source)
    frame.attrs["clipped_numbers"] = clipped_cells
    if "range" in frame.columns:
        pairs = [split_range_domain(str(r)) for r in frame["range"]]
        frame["range"] = [p[0] for p in pairs]
        frame["domain"] = [p[1] for p in pairs]
    return frame


def _to_number(cells: pd.Series, column: str, scale: float, source: str) -> pd.Series:
    import pandas as pd

    # Console output uses en_US thousands separators (`26,430,941`) unless LC_ALL=C.
    cleaned = cells.astype(str).str.strip().str.replace(",", "", regex=False)
    cleaned = cleaned.where(~cleaned.isin(_NULL_CELLS), None)
    try:
        numbers = pd.to_numeric(cleaned)
    except (ValueError, TypeError):
        if _REQUIRED_NUMERIC.search(column):
            bad = cleaned[pd.to_numeric(cleaned, errors="coerce").isna() & cleaned.notna()]
            raise KernelReportError(
                f"{source}: column '{column}' holds a non-number: {str(bad.iloc[0])[:60]!r}"
            ) from None
        return cells
    return numbers * scale if scale != 1 else numbers


def _dedupe(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return unique
