"""Live: stage and progress, the step-time chart, running stats, throughput and GPU telemetry."""
from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.reactive import reactive
from textual.widgets import Label, ProgressBar, Sparkline, Static

from sysprof.profiler_core.api import events, gpus, numbers
from sysprof.profiler_core.base.units import NA, format_ms, optional, ratio, telemetry_cells
from sysprof.profiler_core.tables.run_tables import SHORT_PHASES, ranks_setup
from sysprof.profiler_core.tables.step_rows import STEP_PHASES, step_cells, step_columns, step_phases
from sysprof.tui.model.live_numbers import (
    CHART_SERIES,
    OWN_LOOP_SERIES,
    chart_series,
    profiled_numbers,
    running_phases,
    running_throughput,
)
from sysprof.tui.model.run_files import short_path
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.base import ExportTable, Pane
from sysprof.tui.widgets.quiet import update_quietly, update_text
from sysprof.tui.widgets.tables import WholeCellsTable


def stage_text(state: RunState) -> str:
    """The run's state (events.RUN_STATES), then its stage while it runs, or how it ended and the steps it kept."""
    if state.stage == "idle":
        return "Ready: pick a configuration (1) and press ctrl+r to run, or open a saved run (5)."
    device = escape((state.env or {}).get("device_name") or "…")
    where = f" · {escape(short_path(state.run_dir))}" if state.run_dir else ""
    word = state.state_name
    done, total = state.stage_progress()
    if state.running:  # counts padded to the total's width: a line that grows as digits do rewraps (a layout)
        progress = f" {done:>{len(str(total))}}/{total}" if total else ""
        kept = f"{len(state.steps):>{len(str(state.planned_steps))}} measured steps"
        return f"[b]{word}[/b] · {state.stage}{progress} · {kept} · {device}{where}"
    if word == events.OK:
        return f"[b]{word}[/b] · {done} measured steps · {device}{where}"
    kept = f"{done} of {total} measured steps" if total else f"{done} measured steps"
    reason = events.end_reason(word, state.error)
    return f"[b]{word}[/b] · {kept}" + (f" · {escape(reason)}" if reason else "") + where


def stats_rows(phases: dict) -> list[tuple[str, ...]]:
    """phase, median, ± std, CV: what fits Live's 39 columns whole (the step count is on the stage line)."""
    return [(SHORT_PHASES.get(phase, phase), format_ms(stats.get("median_ms")), format_ms(stats.get("std_ms")),
             optional(stats.get("cv"), ".0%")) for phase, stats in phases.items()]


def stats_key(phases: dict) -> tuple:
    """What the running statistics table shows: redrawn only when a cell of it changes."""
    return tuple(stats_rows(phases))


def stats_table(phases: dict) -> Table:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold", show_edge=False)
    for column in ("phase", "median", "± std", "CV"):
        table.add_column(column, justify="left" if column == "phase" else "right", no_wrap=True)
    for row in stats_rows(phases):
        table.add_row(*row)
    return table


def _why_not(figures, state: RunState) -> str:
    reason = numbers.mfu_missing(figures, state.env or {}) if figures else None
    return f" [dim]({reason})[/]" if reason else ""


def throughput_text(state: RunState) -> str:
    numbers = running_throughput(state)
    lines = [f"tokens/s {optional(numbers.get('tokens_per_s'), ',.0f')}",
             f"{optional(numbers.get('tflops'), '.2f')} TFLOP/s ({numbers.get('precision_used') or NA})",
             f"MFU {optional(numbers.get('mfu'), '.1%')}" + _why_not(numbers, state)]
    compile_s = state.compile_s
    if compile_s is None and state.summary:
        compile_s = state.summary.get("compile_s")
    if compile_s is not None:
        lines.append(f"compile {compile_s:.1f} s (not in step times)")
    between = (state.summary.get("between") or {}).get("step") if state.summary else None
    if between and between["n"] > 1 and between["cv_pct"] is not None:
        lines.append(f"{between['n']} processes: step {format_ms(between['min'])}–{format_ms(between['max'])} "
                     f"between them, CV {between['cv_pct'] / 100:.1%}")
    lines += ranks_lines(state.summary.get("ranks") if state.summary else None)
    profiled = profiled_numbers(state)
    if profiled:
        lines.append(f"profiled ({profiled.get('backend')}) median {format_ms(profiled.get('profiled_median_ms'))}"
                     f", inflation {ratio(profiled.get('inflation'))}")
    return "\n".join(lines + [f"[dim]{notice}[/dim]" for notice in state.notices[-3:]])


def ranks_lines(ranks: dict | None) -> list[str]:
    """--nproc: one line per rank (step median and its phases, communication once profiled; the slowest and any
    flagged rank marked), then the findings; the numbers above are rank 0's."""
    if not ranks:
        return []
    lines = [f"{ranks['world']} ranks ({ranks_setup(ranks)}; above: rank 0), "
             f"tokens/s all {optional(ranks.get('tokens_per_s_all_ranks'), ',.0f')}"]
    for row in ranks["rows"]:
        ms = row["median_ms"]
        phases = " · ".join(f"{short} {optional(ms.get(phase), '.1f')}" for short, phase in
                            (("data", "data"), ("fwd", "forward"), ("bwd", "backward"), ("opt", "optimizer"))
                            if phase in ms)
        comm = f" · comm {row['comm_ms']:.1f} ({optional(row.get('overlap_pct'), '.0f')}% hidden)" \
            if row.get("comm_ms") is not None else ""
        mark = " slowest" if row["mark"] == "slowest" else ""
        flag = f" [red]score {row['straggler_score']:.2f}[/red]" if row["flagged"] else ""
        lines.append(f"rank {row['rank']}: step {format_ms(ms.get('step'))} ({phases}{comm}){mark}{flag}")
    return lines + [f"[yellow]{escape(f)}[/yellow]" for f in ranks["findings"]]


def warnings_text(state: RunState) -> str:
    """The run's stored warnings (stability: each with its cause and remedy), then a traced loop's findings (input-
    bound, periodic spikes, drift, what the hooks found), each with what it rests on, once it has finished (markup)."""
    summary: dict[str, Any] = dict(state.summary or {})
    warnings = "\n".join(f"⚠ {escape(warning['message'])}" for warning in summary.get("warnings") or [])
    findings = [f"● {escape(str(found['text']))} [dim](rests on {escape(str(found.get('rests_on', '')))})[/dim]"
                for found in summary.get("findings") or [] if isinstance(found, dict) and found.get("text")]
    return "\n".join(([f"[yellow]{warnings}[/yellow]"] if warnings else []) + findings)


class StepChart(Vertical):
    """One sparkline per series (wall, forward, backward, optimizer; a traced loop's data and eval once it has them)
    over warm-up and measured steps."""
    run_state: reactive[RunState] = reactive(RunState, always_update=True, init=False)

    def compose(self) -> ComposeResult:
        for series in CHART_SERIES:
            with Horizontal(classes="chart-row", id=f"chart-row-{series}") as row:
                row.display = series not in OWN_LOOP_SERIES
                yield Label(series, id=f"chart-label-{series}", classes="chart-label")
                yield Sparkline([], id=f"chart-{series}", classes=f"chart-{series}")

    def watch_run_state(self, state: RunState) -> None:
        medians = running_phases(state)
        for series, values in chart_series(state).items():
            if series in OWN_LOOP_SERIES:
                self.query_one(f"#chart-row-{series}").display = bool(values)
            self.query_one(f"#chart-{series}", Sparkline).data = values
            stats = medians.get("step" if series == "wall" else series)
            median = stats.get("median_ms") if stats else None
            label = f"{series:<9} {format_ms(median):>9}"
            update_quietly(self.query_one(f"#chart-label-{series}", Label), label, label, 1)  # one line, width 20


class StepTable(WholeCellsTable):
    """Warm-up and measured steps as they arrive, in rows made for every planned step when the run starts.

    Why made ahead, at fixed widths: a row added, or a column widened, changes the table's size, and that lays the
    whole screen out again (the largest cost of the app while steps arrive); a cell filled in only repaints its row."""
    run_state: reactive[RunState] = reactive(RunState, always_update=True, init=False)
    WIDTH = 9  # "warm-up 9", "999.99 ms"; a longer cell widens its column (one layout)
    MOST_MADE_AHEAD = 10_000

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.filled = 0
        self.run_dir: str | None = None  # the run whose rows the table holds
        self.set_phases(STEP_PHASES)

    def set_phases(self, phases: tuple[str, ...]) -> None:
        """A column per phase (a traced loop names its own): new columns, the rows made again."""
        self.clear(columns=True)
        self.phases, self.shown_columns, self.filled = phases, step_columns(phases), 0
        for column in self.shown_columns:
            self.add_column(column.label, width=self.WIDTH)

    def watch_run_state(self, state: RunState) -> None:
        rows = [("warm-up", s) for s in state.warmup_steps] + [("step", s) for s in state.steps]
        ended_short = not state.running and self.row_count > len(rows)  # rows made for steps that never came
        if state.run_dir != self.run_dir:  # another run: the columns of the usual phases until its steps name more
            self.set_phases(STEP_PHASES)
            self.run_dir = state.run_dir
        elif len(rows) < self.filled or ended_short:  # this run ended: its rows as they came
            self.clear()
            self.filled = 0
        phases = step_phases(step for _, step in rows[self.filled:])
        if not set(phases) <= set(self.phases):  # a phase the columns lack: made again with it, from the first row
            self.set_phases(step_phases(step for _, step in rows))
        if self.row_count == 0 and state.running and planned_rows(state):  # made once the plan is known
            self.add_rows([("",) * len(self.shown_columns)] * min(planned_rows(state), self.MOST_MADE_AHEAD))
        for label, step in rows[self.filled:]:
            self.fill(step_cells(self.shown_columns, label, step))

    def fill(self, cells: tuple[str, ...]) -> None:
        if self.filled < self.row_count:
            for column, cell in enumerate(cells):
                wider = len(cell) > self.ordered_columns[column].width
                self.update_cell_at(Coordinate(self.filled, column), cell, update_width=wider)
        else:
            self.add_row(*cells)
        self.filled += 1


def planned_rows(state: RunState) -> int:
    """Warm-up and measured steps of every process the run plans (its config; the steps so far where unknown)."""
    config = state.config or {}
    per_process = int(config.get("warmup") or 0) + int(config.get("steps") or state.planned_steps or 0)
    return max(per_process * int(config.get("repeats") or 1), len(state.warmup_steps) + len(state.steps))


WAITING_FOR_NVML = "waiting for the first NVML reading"


def telemetry_line(sample: gpus.GpuTelemetry) -> str:
    """NVML's readings, or one line saying why there are none (not a row of N/As)."""
    if not sample.available:
        return f"[b]GPU[/b] no telemetry: {escape(sample.missing or 'NVML gave no readings')}"
    return " · ".join(f"[b]{k}[/b] {v}" for k, v in telemetry_cells(sample))


class LivePane(Pane):
    telemetry: reactive[gpus.GpuTelemetry] = reactive(lambda: gpus.GpuTelemetry(missing=WAITING_FOR_NVML), init=False)

    def compose(self) -> ComposeResult:
        yield Static(id="stage-line")
        yield ProgressBar(id="stage-progress", show_eta=False)
        with Horizontal(id="live-body"):
            with Vertical(id="live-left"):
                yield StepChart(id="step-chart").data_bind(LivePane.run_state)
                yield StepTable(id="step-table").data_bind(LivePane.run_state)
            with Vertical(id="live-right"):
                yield Static(id="live-stats")
                yield Static(id="live-throughput")
                yield Static(id="live-warnings")
        yield Static(telemetry_line(gpus.GpuTelemetry(missing=WAITING_FOR_NVML)), id="telemetry")

    def watch_run_state(self, state: RunState) -> None:
        """Each text only when it changed, the screen laid out again only when a height did (widgets/quiet.py)."""
        update_text(self.query_one("#stage-line", Static), stage_text(state))
        self.set_class(state.stage == "failed", "-failed")
        done, total = state.stage_progress()
        bar = self.query_one("#stage-progress", ProgressBar)
        if state.stage == "finished":
            done, total = 100, 100
        bar.update(total=total if total else (100 if not state.running else None), progress=done)
        phases = running_phases(state)
        update_quietly(self.query_one("#live-stats", Static), stats_table(phases), stats_key(phases), len(phases) + 1)
        update_text(self.query_one("#live-throughput", Static), throughput_text(state))
        update_text(self.query_one("#live-warnings", Static), warnings_text(state))

    def watch_telemetry(self, sample: gpus.GpuTelemetry) -> None:
        update_text(self.query_one("#telemetry", Static), telemetry_line(sample))

    def export_table(self) -> ExportTable | None:
        phases = running_phases(self.run_state)
        if not phases:
            return None
        return ExportTable("phases", [{"phase": phase, **stats} for phase, stats in phases.items()])

