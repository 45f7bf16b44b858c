"""The figures a report needs, drawn from the same rows its tables show (matplotlib, the `plots` extra), each
written as PNG and SVG. A figure is chosen by the columns a table has, not by which study made it, so a sweep
with the same columns gets the same figure.

Every function takes rows (a table's records) and returns a matplotlib Figure, or None when the rows hold nothing
to draw; `save` writes one. No pyplot: no global state, no display needed.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sysprof.profiler_core.render.memory_plot import IMAGE_SUFFIXES, PHASE_COLORS

Rows = Sequence[dict[str, Any]]
OOM = "oom"
MISSING_MATPLOTLIB = "no figures: matplotlib is not installed (pip install 'sysprof-tui[plots]')"


def _figure(width: float = 8, height: float = 4, panels: int = 1):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.subplots(1, panels, squeeze=False)[0]


def save(figure, directory: Path, stem: str) -> list[Path]:
    from matplotlib import rc_context

    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{stem}{suffix}" for suffix in IMAGE_SUFFIXES]
    with rc_context({"svg.fonttype": "none"}):  # SVG text stays text: searchable, editable
        for path in paths:
            figure.savefig(path, dpi=130)
    return paths


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value) else None


# --- runs ------------------------------------------------------------------------------------------------------

def phase_bars(runs: Sequence[tuple[str, dict]]) -> Any:
    """Step time by phase, one stacked bar per run (median ms of forward, backward, optimizer)."""
    drawn = [(label, phases) for label, phases in runs if any(p in phases for p in PHASE_COLORS)]
    if not drawn:
        return None
    figure, (axes,) = _figure(8, 1.2 + 0.5 * len(drawn))
    for row, (_, phases) in enumerate(drawn):
        left = 0.0
        for phase, color in PHASE_COLORS.items():
            median = _number((phases.get(phase) or {}).get("median_ms"))
            if median is None:
                continue
            axes.barh(row, median, left=left, color=color, label=phase if row == 0 else None)
            left += median
        step = _number((phases.get("step") or {}).get("median_ms"))
        if step is not None:
            axes.annotate(f"step {step:,.2f} ms", (left, row), xytext=(4, 0), textcoords="offset points",
                          va="center", fontsize="small")
    axes.set_yticks(range(len(drawn)), [label for label, _ in drawn])
    axes.set(xlabel="median ms per step", title="step time by phase")
    axes.legend(loc="lower right", fontsize="small")
    return figure


def kernel_class_bars(kernel_rows: Rows) -> Any:
    """GPU time per kernel class in each phase (stacked bars, ms over the profiled steps)."""
    totals: dict[str, dict[str, float]] = {}
    for row in kernel_rows:
        total = _number(row.get("total_ns"))
        if total is not None and row.get("phase") and row.get("class"):
            phase = totals.setdefault(str(row["phase"]), {})
            phase[str(row["class"])] = phase.get(str(row["class"]), 0.0) + total / 1e6
    if not totals:
        return None
    classes = sorted({name for phase in totals.values() for name in phase},
                     key=lambda name: -sum(phase.get(name, 0.0) for phase in totals.values()))
    figure, (axes,) = _figure(8, 1.5 + 0.5 * len(totals))
    phases = list(totals)
    left = [0.0] * len(phases)
    for name in classes:
        widths = [totals[phase].get(name, 0.0) for phase in phases]
        axes.barh(range(len(phases)), widths, left=left, label=name)
        left = [a + b for a, b in zip(left, widths)]
    axes.set_yticks(range(len(phases)), phases)
    axes.set(xlabel="GPU ms (profiled steps)", title="kernel classes per phase")
    axes.legend(fontsize="small", ncols=min(4, len(classes)), loc="lower right")
    return figure


# --- studies ---------------------------------------------------------------------------------------------------

def attention_scaling(rows: Rows) -> Any:
    """Forward and backward time and peak memory against sequence length, a line per implementation, dtype and d
    (log scales); a cell that ran out of memory is an × at the top of each panel."""
    if not rows or not {"impl", "seq", "fwd mean ms"} <= set(rows[0]):
        return None
    panels = [("fwd mean ms", "forward ms"), ("bwd mean ms", "backward ms"), ("peak MiB", "peak MiB")]
    panels = [(key, label) for key, label in panels if any(_number(row.get(key)) for row in rows)]
    figure, axes_row = _figure(4 * len(panels), 3.6, len(panels))
    lines = _line_groups(rows, ("impl", "dtype", "d"))
    for axes, (key, label) in zip(axes_row, panels):
        for name, group in lines.items():
            points = [(row["seq"], _number(row.get(key))) for row in group if row.get("status") == "ok"]
            points = [(x, y) for x, y in points if y]
            drawn = axes.plot(*zip(*points), marker="o", label=name) if points else None
            color = drawn[0].get_color() if drawn else None
            for row in group:
                if str(row.get("status", "")).lower() == OOM:
                    axes.plot([row["seq"]], [1], marker="x", markersize=9, color=color or "crimson",
                              transform=axes.get_xaxis_transform(), clip_on=False)
        axes.set(xscale="log", yscale="log", xlabel="sequence length", ylabel=label, title=label)
        axes.set_xscale("log", base=2)
    axes_row[0].legend(fontsize="x-small", title="× ran out of memory", title_fontsize="x-small")
    return figure


def _line_groups(rows: Rows, fields: Sequence[str]) -> dict[str, list[dict]]:
    varied = [field for field in fields if len({row.get(field) for row in rows}) > 1] or list(fields[:1])
    groups: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda row: _number(row.get("seq")) or 0):
        name = " ".join(f"{row.get(field)}" if field != "d" else f"d={row.get(field)}" for field in varied)
        groups.setdefault(name, []).append(row)
    return groups


def warmup_curve(rows: Rows) -> Any:
    """Mean time per measured step against warm-up steps, with its std as error bars, per measured pass."""
    if not rows or "warm-up steps" not in rows[0]:
        return None
    measures = [key[: -len(" mean ms")] for key in rows[0] if key.endswith(" mean ms")]
    figure, (axes,) = _figure()
    for measure in measures:
        points = [(row["warm-up steps"], _number(row.get(f"{measure} mean ms")),
                   _number(row.get(f"{measure} std ms")) or 0.0) for row in rows]
        points = [point for point in points if point[1] is not None]
        if points:
            x, y, err = zip(*points)
            axes.errorbar(x, y, yerr=err, marker="o", capsize=3, label=measure)
    axes.set(xlabel="warm-up steps", ylabel="mean ms per measured step (± std)", title="warm-up")
    axes.legend(fontsize="small")
    return figure


def speedup_bars(rows: Rows, title: str) -> Any:
    """Every "… speedup" column as grouped bars, a group per row (named by its naming columns), a line at 1×."""
    columns = [key for key in (rows[0] if rows else {}) if key.endswith("speedup")]
    columns = [key for key in columns if any(_number(row.get(key)) for row in rows)]
    if not columns:
        return None
    labels = [_row_label(row) for row in rows]
    figure, (axes,) = _figure(max(6.0, 0.6 * len(rows) * len(columns)), 4)
    width = 0.8 / len(columns)
    for index, key in enumerate(columns):
        axes.bar([i + index * width for i in range(len(rows))], [_number(row.get(key)) or 0 for row in rows],
                 width, label=key)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks([i + width * (len(columns) - 1) / 2 for i in range(len(rows))], labels, rotation=30,
                    ha="right", fontsize="small")
    axes.set(ylabel="× (higher is faster)", title=title)
    axes.legend(fontsize="small")
    return figure


NAMING = ("model", "ctx", "batch", "mode", "measured", "impl", "dtype", "d", "seq", "candidate", "GPUs")


def _row_label(row: dict) -> str:
    return " ".join(str(row[key]) for key in NAMING if key in row and row[key] is not None) or "row"


def scaling_efficiency(rows: Rows) -> Any:
    """Scaling efficiency against the number of GPUs (1.0: perfect)."""
    if not rows or not {"GPUs", "scaling efficiency"} <= set(rows[0]):
        return None
    points = [(row["GPUs"], _number(row["scaling efficiency"])) for row in rows]
    points = [(x, y) for x, y in points if y is not None and _number(x) is not None]
    if not points:
        return None
    figure, (axes,) = _figure(6, 3.6)
    axes.plot(*zip(*points), marker="o")
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set(xlabel="GPUs", ylabel="scaling efficiency", title="scaling efficiency", ylim=(0, 1.1))
    return figure


def throughput_by_size(rows: Rows) -> Any:
    """Tokens/s and MFU against parameter count, where the table has several model sizes."""
    if not rows or "params" not in rows[0] or len({row.get("params") for row in rows}) < 2:
        return None
    measures = [key for key in ("tokens/s", "MFU %") if any(_number(row.get(key)) for row in rows)]
    if not measures:
        return None
    figure, axes_row = _figure(4 * len(measures), 3.6, len(measures))
    for axes, key in zip(axes_row, measures):
        points = sorted((row["params"], _number(row.get(key))) for row in rows if _number(row.get(key)))
        axes.plot(*zip(*points), marker="o")
        axes.set(xscale="log", xlabel="parameters", ylabel=key, title=f"{key} by model size")
    return figure


STUDY_FIGURES: tuple[tuple[str, Callable[[Rows], Any]], ...] = (
    ("attention", attention_scaling), ("warm-up", warmup_curve), ("scaling", scaling_efficiency),
    ("throughput", throughput_by_size))
