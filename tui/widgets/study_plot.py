"""The Studies screen's figure: the study's main figure (tables/figure_data.main_figure, the same data as the
report's) drawn in the terminal with plotext. Log scales where the report has them; × where a cell ran out of
memory; the 1× line under speed-ups."""
from __future__ import annotations

import math

from textual_plotext import PlotextPlot

from sysprof.profiler_core.tables.figure_data import Panel

MAX_TICKS = 8
COLORS = ("blue", "orange", "green", "red", "magenta", "cyan", "yellow", "gray")


class StudyPlot(PlotextPlot):
    def draw(self, panel: Panel | None) -> None:
        plt = self.plt
        plt.clear_figure()
        if panel is not None:
            (_bars if panel.bars else _lines)(plt, panel)
            plt.title("; ".join([panel.title, *panel.notes]))
            plt.xlabel(panel.xlabel)
            plt.ylabel(panel.ylabel)
        self.refresh()


def _lines(plt, panel: Panel) -> None:
    keys = [series.color_key or series.label for series in panel.series]
    if len(set(keys)) < 2:  # one d and dtype: a colour per line, not one for all
        keys = [series.label for series in panel.series]
    colors = {key: COLORS[index % len(COLORS)] for index, key in enumerate(dict.fromkeys(keys))}
    top = max((y for series in panel.series for y in series.y), default=1.0)
    for series, key in zip(panel.series, keys):
        color = colors[key]
        if series.x:
            plt.plot(list(series.x), list(series.y), label=series.label, marker="braille", color=color)
        if series.missing:  # ran out of memory: an × at the top, where the value would have been off the chart
            plt.scatter(list(series.missing), [top] * len(series.missing), marker="x", color="red",
                        label=f"{series.label}: out of memory")
    ticks = sorted({x for series in panel.series for x in [*series.x, *series.missing]})
    if ticks and all(isinstance(x, (int, float)) for x in ticks):  # the values measured, not a float grid
        shown = ticks[:: max(1, len(ticks) // MAX_TICKS)]
        plt.xticks(shown, [f"{x:g}" for x in shown])
    if panel.xlog:
        plt.xscale("log")
    if panel.ylog:
        plt.yscale("log")
    if panel.reference is not None:
        plt.hline(panel.reference, "gray")


def _bars(plt, panel: Panel) -> None:
    labels = [str(label) for label in panel.series[0].x]
    heights = [[0.0 if math.isnan(y) else y for y in series.y] for series in panel.series]  # plotext draws no NaN
    plt.multiple_bar(labels, heights, labels=[series.label for series in panel.series])
    if panel.reference is not None:
        plt.hline(panel.reference, "gray")
