"""The launch-bound or GPU-bound table of a kernel analysis (phases.*.launch, profiler_core/kernels/launch_bound.py).

Plain dicts in, rich tables and text out; no pandas, so the app may import it.
"""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from sysprof.profiler_core.base.units import optional
from sysprof.profiler_core.tables.launch_cells import phase_launches

# Two-line headers keep the table within 80 columns; "other" idle (the rest of the span) is in the JSON.
COLUMNS = ("phase", "busy %", "host-\nwait %", "kernel-\nwait %", "launch\nµs", "kernels <\nlaunch %", "verdict")
FIELDS = ("busy_pct", "host_wait_pct", "kernel_wait_pct", "median_launch_us", "shorter_than_launch_pct")


def launch_table(analysis: dict) -> Table | None:
    """Per phase: busy and idle shares of its GPU span, the median launch call, the verdict; None without figures."""
    launches = phase_launches(analysis)
    if not launches:
        return None
    below_us = next(iter(launches.values())).get("kernel_wait_below_us")
    title = ("Launch-bound or GPU-bound: % of each phase's GPU span (host-wait: idle until the next launch "
             f"returned; kernel-wait: queued gaps < {optional(below_us, 'g')} µs; launch: median call)")
    table = Table(title=title, title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("phase", "verdict") else "right")
    for phase, launch in launches.items():
        cells = [optional(launch.get(key), ".1f") for key in FIELDS]
        table.add_row(phase, *cells, launch["verdict"])
    return table


def verdict_lines(analysis: dict) -> list[str]:
    """Per phase: the verdict with its reason, then what would help."""
    lines = []
    for phase, launch in phase_launches(analysis).items():
        lines.append(f"[b]{phase}[/b]: {launch['verdict']} — {escape(launch['reason'])}")
        lines.append(f"  remedy: {escape(launch['remedy'])}")
    return lines


def print_launch_analysis(console, analysis: dict) -> None:
    table = launch_table(analysis)
    if table is None:
        return
    console.print(table)
    for line in verdict_lines(analysis):
        console.print(line, highlight=False)
