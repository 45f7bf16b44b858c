"""What a study's figures show, as plain data: the report draws it with matplotlib (report_figures), the Studies
screen in the terminal with plotext. One owner for which columns become which lines, so the two never disagree.

A figure is chosen by the columns a table has, not by which study made it: a sweep with the same columns gets the
same figure. No matplotlib, no pandas here.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sysprof.profiler_core.base.code_specs import short_specs
from sysprof.profiler_core.base.events import OK, OOM

Rows = Sequence[dict[str, Any]]
NAMING = ("model", "ctx", "batch", "mode", "measured", "impl", "dtype", "d", "seq", "candidate", "GPUs")


@dataclass(frozen=True)
class Series:
    label: str
    x: Sequence[Any]  # numbers, or category names for bars
    y: Sequence[float]
    err: Sequence[float] | None = None  # error bars (± std)
    missing: Sequence[Any] = ()  # x where the cell ran out of memory: marked, not drawn as a value
    color_key: str = ""  # series with the same key share a colour (attention: its d and dtype) …
    style_key: str = ""  # … and with the same key a line style (attention: its implementation)


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: Sequence[Series]
    bars: bool = False  # grouped bars over categories, else lines over numbers
    xlog: bool = False
    ylog: bool = False
    reference: float | None = None  # a horizontal line (1× for a speed-up, 1.0 for an efficiency)
    notes: Sequence[str] = field(default_factory=tuple)


def number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value) else None


def measured(pairs) -> tuple[list[Any], list[float]]:
    """(xs, ys) of the (x, y) pairs whose y is a number (a cell that did not run has none)."""
    kept = [(x, y) for x, y in pairs if isinstance(y, float)]
    return [x for x, _ in kept], [y for _, y in kept]


def attention_panels(rows: Rows) -> list[Panel]:
    """Forward and backward time and peak memory against sequence length, a line per implementation, dtype and
    d (log scales); where a cell ran out of memory its x is in the series' `missing`."""
    if not rows or not {"impl", "seq", "fwd mean ms"} <= set(rows[0]):
        return []
    measures = [("fwd mean ms", "forward ms"), ("bwd mean ms", "backward ms"), ("peak MiB", "peak MiB")]
    panels = []
    for key, label in measures:
        series = [_attention_series(name, group, key) for name, group in _line_groups(rows).items()]
        series = [one for one in series if one.y or one.missing]
        if any(one.y for one in series):
            panels.append(Panel(label, "sequence length", label, series, xlog=True, ylog=True,
                                notes=("× ran out of memory",) if any(one.missing for one in series) else ()))
    return panels


def _attention_series(name: str, group: list[dict], key: str) -> Series:
    xs, ys = measured((row.get("seq"), number(row.get(key))) for row in group if row.get("status") == OK)
    missing = [row.get("seq") for row in group if str(row.get("status", "")).lower() == OOM]
    first = group[0]
    return Series(name, xs, ys, missing=missing,
                  color_key=f"{first.get('dtype')} {first.get('d')}", style_key=str(first.get("impl")))


def _line_groups(rows: Rows) -> dict[str, list[dict]]:
    fields = ("impl", "dtype", "d")
    varied = [name for name in fields if len({row.get(name) for row in rows}) > 1] or ["impl"]
    short = short_specs({str(row.get("impl")) for row in rows})
    groups: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda row: number(row.get("seq")) or 0):
        label = " ".join(f"d={row.get(name)}" if name == "d" else short[str(row.get(name))] if name == "impl"
                         else str(row.get(name)) for name in varied)
        groups.setdefault(label, []).append(row)
    return groups


def warmup_panels(rows: Rows) -> list[Panel]:
    """Mean time per measured step against warm-up steps, ± std, per measured pass."""
    if not rows or "warm-up steps" not in rows[0]:
        return []
    series = []
    for measure in (key[: -len(" mean ms")] for key in rows[0] if key.endswith(" mean ms")):
        ran = [row for row in rows if number(row.get(f"{measure} mean ms")) is not None]
        xs, ys = measured((row.get("warm-up steps"), number(row.get(f"{measure} mean ms"))) for row in ran)
        if xs:
            series.append(Series(measure, xs, ys, [number(row.get(f"{measure} std ms")) or 0.0 for row in ran]))
    return [Panel("warm-up", "warm-up steps", "mean ms per measured step (± std)", series)] if series else []


def speedup_panels(rows: Rows, title: str) -> list[Panel]:
    """Every "… speedup" column as grouped bars over the rows (named by their naming columns), a line at 1×."""
    columns = [key for key in (rows[0] if rows else {}) if key.endswith("speedup")]
    columns = [key for key in columns if any(number(row.get(key)) for row in rows)
               and any(number(row.get(key)) != 1.0 for row in rows)]  # all 1×: the baseline itself
    if not columns:
        return []
    labels = [row_label(row) for row in rows]
    series = [Series(key, labels, [_or_nan(number(row.get(key))) for row in rows]) for key in columns]
    gaps = ("no bar: a side did not run (OOM or failed)",) if any(math.isnan(y) for one in series for y in one.y) \
        else ()
    title = title if "speedup" in title.lower() or "speed-up" in title.lower() else f"{title} (speed-ups)"
    return [Panel(title, "", "× (higher is faster)", series, bars=True, reference=1.0, notes=gaps)]


def _or_nan(value: float | None) -> float:
    """A bar that is not there: NaN draws nothing (0 would read as a measured 0×)."""
    return math.nan if value is None else value


def row_label(row: dict) -> str:
    """model small ctx=256, d=64 seq=1024: names alone, numbers with what they count."""
    parts = [f"{key}={row[key]}" if isinstance(row[key], int) else str(row[key])
             for key in NAMING if key in row and row[key] is not None]
    kept = [part for index, part in enumerate(parts) if not index or part != parts[index - 1]]
    return " ".join(kept) or "row"  # a forward-mode row's "forward forward" reads once


def scaling_panels(rows: Rows) -> list[Panel]:
    """Scaling efficiency against the number of GPUs (1.0: perfect)."""
    if not rows or not {"GPUs", "scaling efficiency"} <= set(rows[0]):
        return []
    xs, ys = measured((row["GPUs"], number(row.get("scaling efficiency"))) for row in rows if number(row.get("GPUs")))
    if not xs:
        return []
    series = [Series("efficiency", xs, ys)]
    return [Panel("scaling efficiency", "GPUs", "scaling efficiency", series, reference=1.0)]


def throughput_panels(rows: Rows) -> list[Panel]:
    """Tokens/s and MFU against parameter count, where the table has several model sizes: a line per setting of
    the other fields the table varies (ctx, batch, dtype …)."""
    if not rows or len({row.get("params") for row in rows} - {None}) < 2:
        return []
    others = [name for name in SETTINGS if len({row.get(name) for row in rows}) > 1]
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(" ".join(f"{name}={row.get(name)}" for name in others) or "all", []).append(row)
    panels = []
    for key in ("tokens/s", "MFU %"):
        series = [Series(label, *measured(sorted((row.get("params"), number(row.get(key))) for row in group
                                                 if row.get("params") and number(row.get(key)))))
                  for label, group in groups.items()]
        series = [one for one in series if one.x]
        if series:
            panels.append(Panel(f"{key} by model size", "parameters", key, series, xlog=True))
    return panels


SETTINGS = ("ctx", "batch", "mode", "dtype", "compile", "attention", "nproc")  # a throughput line each


FIGURES: tuple[tuple[str, Callable[[Rows], list[Panel]]], ...] = (
    ("attention", attention_panels), ("warm-up", warmup_panels), ("scaling", scaling_panels),
    ("throughput", throughput_panels))


def table_figures(title: str, rows: Rows) -> list[tuple[str, list[Panel]]]:
    """(name, panels) of every figure this table makes: its shape's figure, then its speed-ups."""
    found = [(name, make(rows)) for name, make in FIGURES]
    found.append(("speedups", speedup_panels(rows, title)))
    return [(name, panels) for name, panels in found if panels]
