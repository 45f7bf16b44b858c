"""The figures a report needs, drawn with matplotlib (the `plots` extra) from the same rows its tables show, each
written as PNG and SVG: a run's phases and kernel classes here, a study's panels as figure_data chose them.

Every function returns a matplotlib Figure, or None when there is nothing to draw; `save` writes one. No pyplot:
no global state, no display needed.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sysprof.profiler_core.render.memory_plot import IMAGE_SUFFIXES, PHASE_COLORS
from sysprof.profiler_core.tables.figure_data import Panel, Rows
from sysprof.profiler_core.tables.figure_data import number as _number

MAX_WIDTH_IN = 14  # a page's width, give or take: more bars get narrower, not a wider figure
MARKERS, LINESTYLES = ("o", "s", "^", "D"), ("-", "--", ":", "-.")
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
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the bars, never on them
    return figure


# --- studies: the panels of figure_data, drawn ---------------------------------------------------------------

def draw_panels(panels: Sequence[Panel]) -> Any:
    """Panels side by side: lines (log scales where asked; an × at the top where a cell ran out of memory) or
    grouped bars, a reference line where the panel has one."""
    if not panels:
        return None
    wide = max((len(series.x) * len(panel.series) for panel in panels if panel.bars for series in panel.series[:1]),
               default=0)
    figure, axes_row = _figure(min(max(4.0 * len(panels), 0.3 * wide, 6.0), MAX_WIDTH_IN), 3.8 + (wide > 12),
                               len(panels))
    for axes, panel in zip(axes_row, panels):
        (_bars if panel.bars else _lines)(axes, panel)
        if panel.reference is not None:
            axes.axhline(panel.reference, color="black", linewidth=0.8)
        axes.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
    axes_row[-1].legend(fontsize="x-small", title="; ".join(panels[0].notes) or None, title_fontsize="x-small",
                        loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the last panel, never on a line
    return figure


def _lines(axes, panel: Panel) -> None:
    colors = _keyed(series.color_key for series in panel.series)
    styles = _keyed(series.style_key for series in panel.series)
    by_label = len(colors) < 2  # one d and dtype: a colour per line, or every implementation would share one
    for series in panel.series:
        style = {"marker": MARKERS[styles[series.style_key] % len(MARKERS)],
                 "linestyle": LINESTYLES[styles[series.style_key] % len(LINESTYLES)]}
        if series.color_key and not by_label:
            style["color"] = f"C{colors[series.color_key] % 10}"
        drawn = axes.errorbar(series.x, series.y, yerr=series.err, capsize=3, label=series.label, **style) \
            if series.err else axes.plot(series.x, series.y, label=series.label, **style)
        color = (drawn.lines[0] if series.err else drawn[0]).get_color() if series.x else "crimson"
        for x in series.missing:  # inside the top edge, where the value would have been off the chart
            axes.plot([x], [0.96], marker="x", markersize=9, color=color, transform=axes.get_xaxis_transform())
    if panel.xlog:
        axes.set_xscale("log", base=2 if panel.xlabel == "sequence length" else 10)
    if panel.ylog:
        axes.set_yscale("log")


def _keyed(keys) -> dict[str, int]:
    """Each distinct key its index: series of one key share a colour or a line style."""
    return {key: index for index, key in enumerate(dict.fromkeys(keys))}


def _bars(axes, panel: Panel) -> None:
    labels = list(panel.series[0].x)
    width = 0.8 / len(panel.series)
    for index, series in enumerate(panel.series):
        axes.bar([i + index * width for i in range(len(labels))], series.y, width, label=series.label)
    axes.set_xticks([i + width * (len(panel.series) - 1) / 2 for i in range(len(labels))], labels, rotation=30,
                    ha="right", fontsize="small")
