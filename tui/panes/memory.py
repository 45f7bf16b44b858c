"""Memory: peaks per phase, the active-memory timeline with phase marks, and four tables."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import Static
from textual_plotext import PlotextPlot

from sysprof.profiler_core.api import runs, vocab
from sysprof.profiler_core.base.units import bytes_cell
from sysprof.profiler_core.render.memory_plot import GIB, peak_point, phase_spans, x_label
from sysprof.profiler_core.tables.memory_tables import MEMORY_TABLES, memory_model
from sysprof.profiler_core.tables.module_tables import absent_line
from sysprof.tui.keys import pane_bindings
from sysprof.tui.model.advice import absent_memory
from sysprof.tui.model.memory_data import load_memory_analysis, peaks_by_phase
from sysprof.tui.model.run_files import short_path
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.base import ExportTable, Pane
from sysprof.tui.widgets.tables import MarkableTable, OutOfViewCells


def summary_text(analysis: dict, snapshot: Path) -> str:
    peak = analysis.get("peak") or {}
    phases = peaks_by_phase(analysis.get("timeline") or {})
    where = short_path(snapshot) + ("" if snapshot.is_file() else " (absent)")
    images = analysis.get("images") or []
    where += f" · plot: {', '.join(images)}" if images else ""
    return (f"peak [b]{bytes_cell(analysis.get('peak_allocated_bytes'))}[/b] in {peak.get('phase')} step "
            f"{peak.get('step')} · reserved {bytes_cell(analysis.get('peak_reserved_bytes'))} · baseline "
            f"{bytes_cell(analysis.get('baseline_bytes'))}\nper phase: "
            + " · ".join(f"{phase} {bytes_cell(value)}" for phase, value in phases.items())
            + f"\nmemory_viz: {where}")


TERMINAL_PHASE_COLORS = {"forward": "blue", "backward": "orange", "optimizer": "green"}


class MemoryPlot(PlotextPlot):
    """Active memory over the recorded steps: a line per phase start with its initial, the peak marked (the same
    spans and peak as the PNG/SVG in the run directory)."""

    def draw(self, timeline: dict) -> None:
        plt = self.plt
        plt.clear_figure()
        levels = [level / GIB for level in timeline.get("active_bytes") or []]
        if levels:
            top = max(levels) * 1.15 or 1.0
            plt.plot(timeline.get("t") or list(range(len(levels))), levels, marker="braille")
            for span in phase_spans(timeline):
                color = TERMINAL_PHASE_COLORS.get(span["phase"], "gray")
                plt.vline(span["start"], color)
                plt.text((span["phase"] or "?")[0].upper(), span["start"], top * 0.97, color=color)
            peak = peak_point(timeline)
            if peak is not None:
                plt.scatter([peak[0]], [peak[1] / GIB], marker="x", color="red")
            plt.ylim(0, top)
            plt.xlabel(x_label(timeline))
            plt.ylabel("GiB")
        self.refresh()


class MemoryPane(Pane):
    BINDINGS = pane_bindings("Memory")
    analysis: reactive[dict | None] = reactive(None, always_update=True, init=False)
    table_name: reactive[str] = reactive(MEMORY_TABLES[0], init=False)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def compose(self) -> ComposeResult:
        yield Static("No run yet: run one with memory capture, or open a saved run (5).", id="memory-summary")
        yield Static("active memory over time", id="memory-axis")
        yield MemoryPlot(id="memory-timeline")
        yield Static(id="memory-table-title")
        yield MarkableTable(id="memory-table")
        yield OutOfViewCells("memory-table", id="memory-more")

    def watch_run_state(self, state: RunState) -> None:
        directory = self.analysis_to_load(state, "memory")
        if directory is not None:
            self.load(directory)

    @work(thread=True, exclusive=True, exit_on_error=False, group="memory")
    def load(self, directory: Path) -> None:
        analysis, problem = load_memory_analysis(directory)
        self.from_worker(self.show_analysis, analysis, problem)

    def show_analysis(self, analysis: dict | None, problem: str | None) -> None:
        try:
            self.analysis = analysis
        except vocab.DAMAGED_DATA as exc:  # JSON, but not shaped like an analysis: damaged, or from another version
            where = runs.AnalysisFolder(self.loaded_dir).analysis_file if self.loaded_dir else "the memory analysis"
            analysis, problem = None, f"cannot show {where}: not a memory analysis ({type(exc).__name__}: {exc})"
            self.analysis = None
        if analysis is None:
            self.query_one("#memory-summary", Static).update(problem or absent_memory(self.run_state))
        self.set_class(analysis is None, "-empty")

    def watch_analysis(self, analysis: dict | None) -> None:
        timeline = (analysis or {}).get("timeline") or {}
        self.query_one("#memory-timeline", MemoryPlot).draw(timeline)
        if analysis is not None:
            assert self.loaded_dir is not None  # an analysis is only loaded from loaded_dir (analysis_to_load)
            times = timeline.get("t") or [0]
            self.query_one("#memory-summary", Static).update(
                summary_text(analysis, runs.AnalysisFolder(self.loaded_dir).snapshot))
            self.query_one("#memory-axis", Static).update(
                f"active {bytes_cell(min(timeline.get('active_bytes') or [0]))} … "
                f"{bytes_cell(max(timeline.get('active_bytes') or [0]))} over {times[-1]:,.0f} "
                f"{timeline.get('t_unit', '')} · {phase_letters(timeline)}: phase starts · x: peak")
        self.watch_table_name(self.table_name)

    def watch_table_name(self, name: str) -> None:
        model = memory_model(name, self.analysis or {})
        records = model.rows if self.analysis else []
        self.query_one("#memory-table", MarkableTable).show_model(
            model if self.analysis else replace(model, rows=[]),
            widths={"where": 28, "explanation": 40, "largest_frame": 28})
        others = [n for n in MEMORY_TABLES if n != name]
        hint = f"t: {' / '.join(others)}"
        if name == "module types" and not records:  # how to get the table comes before the keys
            hint = f"{absent_line((self.analysis or {}).get('modules'))} · t: {others[0]}"
        self.query_one("#memory-table-title", Static).update(f"[b]{name}[/b] · {hint}")

    def action_next_table(self) -> None:
        self.table_name = MEMORY_TABLES[(MEMORY_TABLES.index(self.table_name) + 1) % len(MEMORY_TABLES)]

    def export_table(self) -> ExportTable | None:
        if not self.analysis:
            return None
        table = self.query_one("#memory-table", MarkableTable)
        return ExportTable(self.table_name.replace(" ", "_"), table.selected_records())


def phase_letters(timeline: dict) -> str:
    """The plot's phase initials, as "F/B/O" (a traced loop's data phase adds D): a run's three when it has no marks."""
    found = {(mark.get("phase") or "?")[0].upper() for mark in timeline.get("phase_marks") or []}
    order = "DFBOE"  # a step's phases in the order they run, then any other
    return "/".join(sorted(found, key=lambda letter: (order.index(letter) if letter in order else len(order),
                                                      letter))) or "F/B/O"
