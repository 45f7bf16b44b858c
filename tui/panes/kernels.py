"""Kernels: the per-phase kernel table of a run (sort, filter, phase), class breakdown, GEMM fraction, launch-bound or
GPU-bound."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Static

from sysprof.profiler_core.render.launch_report import verdict_lines
from sysprof.profiler_core.render.rows import paint_model
from sysprof.profiler_core.tables.kernel_tables import KERNEL_COLUMNS, kernels_model
from sysprof.profiler_core.tables.module_tables import KERNEL_ROW_FIELDS, absent_line, kernel_module_model
from sysprof.profiler_core.tables.run_tables import phase_kernel_model
from sysprof.tui.keys import pane_bindings
from sysprof.tui.model.advice import absent_kernels
from sysprof.tui.model.kernel_data import (
    ALL_PHASES,
    KERNEL_TABLES,
    KernelData,
    KernelView,
    apply_view,
    load_kernel_data,
)
from sysprof.tui.model.kernel_text import (
    attention_flops_line,
    backend_line,
    kernel_details,
    rank_choices,
    rank_lines,
)
from sysprof.tui.model.live_numbers import profiled_numbers
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.base import ExportTable, Pane
from sysprof.tui.widgets.tables import MarkableTable

MAX_SHOWN_ROWS = 1000  # the DataTable draws every row it holds; export still gets all of them


def sort_label(key: str) -> str:
    column = KERNEL_COLUMNS.get(key)
    return column.label if column else key


def phase_breakdown(analysis: dict) -> Table:
    """The per-phase kernel table (render/table_models.phase_kernel_model), as the CLI shows it, drawn compact."""
    return paint_model(phase_kernel_model(analysis), compact=True)


class KernelsPane(Pane):
    BINDINGS = pane_bindings("Kernels")
    view: reactive[KernelView] = reactive(KernelView, always_update=True, init=False)
    data: reactive[KernelData | None] = reactive(None, always_update=True, init=False)
    table_name: reactive[str] = reactive(KERNEL_TABLES[0], init=False)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.view_rows = None  # the filtered, sorted DataFrame behind the table
        self.shown_rank: int | None = None  # --nproc: whose report the tables show (the first rank's at first)
        self._ranks_drawn: tuple[object, int | None] | None = None  # what the rank lines show now

    def compose(self) -> ComposeResult:
        yield Static("No run yet: run one (ctrl+r) or open a saved run (5).", id="kernel-header")
        yield Static(id="kernel-phases")
        yield Static(id="kernel-ranks")
        with Horizontal(id="kernel-controls"):
            yield Input(placeholder="filter kernels by name (/)", id="kernel-filter", compact=True)
            yield Static(id="kernel-view")
        yield MarkableTable(id="kernel-table")
        with Vertical(id="kernel-details"):
            yield Static(id="kernel-numbers")
            yield Static(id="kernel-name")

    def watch_run_state(self, state: RunState) -> None:
        if self.data is not None and self.data.table is not None:  # the inflation is known once the run ends
            self.query_one("#kernel-header", Static).update(backend_line(profiled_numbers(state), self.data.analysis))
        directory = self.analysis_to_load(state, "kernels")
        if directory is not None:
            choices = rank_choices(self.profile)
            self.shown_rank = choices[0][0] if choices else None
            self.load(directory)
        self.show_ranks()

    @property
    def profile(self) -> Mapping[str, Any] | None:
        summary = self.run_state.summary if self.run_state else None
        return summary.get("profile") if summary else None

    def show_ranks(self) -> None:
        """Redrawn only when the profile or the rank shown changes: run states arrive with every step."""
        drawn = (self.profile, self.shown_rank)
        if self._ranks_drawn is not None and drawn[0] is self._ranks_drawn[0] and drawn[1] == self._ranks_drawn[1]:
            return
        self._ranks_drawn = drawn
        ranks = self.query_one("#kernel-ranks", Static)
        ranks.update(rank_lines(self.profile, self.shown_rank))
        ranks.display = bool(rank_choices(self.profile))

    def action_next_rank(self) -> None:
        """--nproc: the next rank's kernel tables (each rank has its own report)."""
        choices = rank_choices(self.profile)
        if len(choices) < 2 or not self.run_state.run_dir:
            self.notify("One report only: the next rank's tables come with --nproc 2 or more and a profiler.")
            return
        ranks = [rank for rank, _ in choices]
        position = ranks.index(self.shown_rank) if self.shown_rank in ranks else -1
        self.shown_rank, path = choices[(position + 1) % len(choices)]
        self.loaded_dir = (Path(self.run_state.run_dir) / path).parent
        self.load(self.loaded_dir)
        self.show_ranks()

    @work(thread=True, exclusive=True, exit_on_error=False, group="kernels")
    def load(self, directory: Path) -> None:
        data = load_kernel_data(directory)
        self.from_worker(setattr, self, "data", data)

    def watch_data(self, data: KernelData | None) -> None:
        header, phases = self.query_one("#kernel-header", Static), self.query_one("#kernel-phases", Static)
        if data is None or data.table is None:
            header.update((data.problem if data else None) or absent_kernels(self.run_state))
            phases.update("")
        else:
            header.update(backend_line(profiled_numbers(self.run_state), data.analysis))
            flops = attention_flops_line(data.analysis)
            phases.update(Group(phase_breakdown(data.analysis), flops) if flops else phase_breakdown(data.analysis))
            phases.tooltip = "\n".join(verdict_lines(data.analysis)) or None  # why each phase is bound, and the remedy
        # a new table keeps the filter the field shows, so the rows on screen (and an export) are what it says
        self.view = KernelView(name_filter=self.query_one("#kernel-filter", Input).value.strip())

    def watch_table_name(self, name: str) -> None:
        self.query_one("#kernel-filter").display = name == "kernels"  # names filter kernels, not module types
        self.view = self.view  # redraw the table under the same phase

    def watch_view(self, view: KernelView) -> None:
        data, table = self.data, self.query_one("#kernel-table", MarkableTable)
        if data is None or data.table is None:
            self.view_rows = None
            table.show_model(kernels_model([]))
            return
        if self.table_name == "module types":
            self.show_module_types(data, view)
            return
        source = data.rows_for(view.phase)
        self.view_rows = apply_view(source, view)
        table.show_model(kernels_model(self.view_rows.head(MAX_SHOWN_ROWS).to_dict("records")),
                         widths={"name": 36, "phase": 9 if source is data.table else 12, "class": 11})
        arrow = "↓" if view.descending else "↑"
        self.query_one("#kernel-view", Static).update(
            f"phase [b]{view.phase}[/b] (p) · sort [b]{sort_label(view.sort_by)} {arrow}[/b] (s) · "
            f"{len(self.view_rows)} of {len(source)} rows · t: module types")
        self.show_details(table.cursor_record())

    def show_module_types(self, data: KernelData, view: KernelView) -> None:
        """GPU time by module type (--nvtx-modules), the user's ranges as sub-rows; one line when there is none."""
        model = kernel_module_model(data.analysis, None if view.phase == ALL_PHASES else view.phase)
        rows = model.rows
        self.query_one("#kernel-table", MarkableTable).show_model(model, widths={"phase": 9, "type": 28})
        line = f"phase [b]{view.phase}[/b] (p)" if rows else absent_line(data.analysis.get("modules"))
        self.query_one("#kernel-view", Static).update(f"[b]module types[/b] · t: kernels · {line}")
        self.show_details(None)

    @on(Input.Changed, "#kernel-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.view = replace(self.view, name_filter=event.value.strip())

    @on(Input.Submitted, "#kernel-filter")
    def filter_done(self) -> None:
        self.query_one("#kernel-table").focus()

    @on(DataTable.HeaderSelected)
    def header_clicked(self, event: DataTable.HeaderSelected) -> None:
        if event.column_key.value in KERNEL_COLUMNS:
            self.view = self.view.sorted_by(event.column_key.value)

    @on(DataTable.RowHighlighted)
    def row_highlighted(self) -> None:
        if self.table_name == "kernels":  # module-type rows need no details line: the row says it all
            record = self.query_one("#kernel-table", MarkableTable).cursor_record()
            self.show_details(record)

    def show_details(self, record: dict | None) -> None:
        numbers, name = kernel_details(record)
        self.query_one("#kernel-numbers", Static).update(numbers)
        self.query_one("#kernel-name", Static).update(name)

    def action_next_table(self) -> None:
        self.table_name = KERNEL_TABLES[(KERNEL_TABLES.index(self.table_name) + 1) % len(KERNEL_TABLES)]

    def action_next_sort(self) -> None:
        self.view = self.view.next_sort()

    def action_reverse_sort(self) -> None:
        self.view = replace(self.view, descending=not self.view.descending)

    def action_focus_filter(self) -> None:
        self.query_one("#kernel-filter").focus()

    def action_next_phase(self) -> None:
        phases = self.data.phases if self.data and self.data.phases else ("all",)
        position = phases.index(self.view.phase) if self.view.phase in phases else -1
        self.view = replace(self.view, phase=phases[(position + 1) % len(phases)])

    def export_table(self) -> ExportTable | None:
        table = self.query_one("#kernel-table", MarkableTable)
        if self.table_name == "module types" and self.data is not None and self.data.table is not None:
            records = [{key: row.get(key) for key in KERNEL_ROW_FIELDS} for row in table.selected_records()]
            return ExportTable("module_types", records)
        if self.view_rows is None:
            return None
        records = table.selected_records() if table.marked else self.view_rows.to_dict("records")
        return ExportTable("kernels", records)
