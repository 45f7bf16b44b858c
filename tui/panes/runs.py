"""Runs: run and study directories under the runs root (and those opened), newest first; open one; compare
two runs."""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Static

from sysprof.profiler_core.api import (
    RunConfig,
    configs,
    events,
    numbers,
    runs,
    vocab,
)
from sysprof.profiler_core.tables.compare_tables import TEXT_KEYS, compare_model
from sysprof.profiler_core.tables.runs_list import NAME_WIDTH, runs_list_model
from sysprof.tui.keys import pane_bindings
from sysprof.tui.model.run_files import short_path
from sysprof.tui.panes.base import ExportTable, Pane
from sysprof.tui.reporting import ReportActions
from sysprof.tui.widgets.tables import MarkableTable, OutOfViewCells


def ab_command(config_a: Mapping[str, Any], config_b: Mapping[str, Any], repeats: int = 4) -> str:
    """`ab --a "…" --b "…"` rebuilding each run's config (its own repeats left out: ab sets them)."""
    sides = [shlex.join(configs.config_to_args(replace(RunConfig.from_dict(dict(config)), repeats=RunConfig().repeats)))
             for config in (config_a, config_b)]
    return f"ab --a={shlex.quote(sides[0])} --b={shlex.quote(sides[1])} --repeats {repeats}"  # = : '--compile' alone


def differences_line(run_a: dict, run_b: dict) -> str:
    """What B changes over A, as `sysprof compare` names it; runs of different steps are said to be."""
    differences = numbers.config_differences(*(((run.get("summary") or {}).get("config") or {})
                                               for run in (run_a, run_b)))
    if not differences:
        return ""
    text = numbers.differences_text(differences)
    if numbers.other_step_fields(differences):
        return f"\n[b]different steps[/b] ({text}): their times are not one step's before and after"
    return f"\nA and B differ in {text}"


def _when(started: float) -> str | None:
    """A Unix time as local date and time to the second: a float in a table prints as 1.79575e+09."""
    return datetime.fromtimestamp(started).isoformat(sep=" ", timespec="seconds") if started else None


class RunsPane(ReportActions, Pane):
    BINDINGS = pane_bindings("Runs")

    class Open(Message):
        def __init__(self, path: Path, switches: int | None = None):
            super().__init__()
            self.path, self.switches = path, switches  # the app's pane switches when enter was pressed

    class Interleave(Message):
        """Run this `sysprof ab` command on Studies."""

        def __init__(self, command: str):
            super().__init__()
            self.command = command

    def __init__(self, runs_root: Path, extra_runs: list[Path], **kwargs):
        super().__init__(**kwargs)
        self.runs_root, self.extra_runs = runs_root, extra_runs
        self.comparison: list[dict] = []
        self.compared: tuple[str, str] = ("", "")  # the names of runs A and B, for exports

    def compose(self) -> ComposeResult:
        yield Static(f"runs and studies under {short_path(self.runs_root)} · enter open · space mark · "
                     "c compare",
                     id="runs-title")
        yield MarkableTable(id="runs-table")
        yield OutOfViewCells("runs-table", id="runs-more")
        yield Static(id="compare-title")
        yield MarkableTable(id="compare-table")
        yield OutOfViewCells("compare-table", id="compare-more")

    def on_mount(self) -> None:
        self.action_refresh()

    def watch_run_state(self, state) -> None:
        if state.running or not state.run_dir:
            return
        shown = {record["path"]: record.get("state") for record in self.query_one("#runs-table", MarkableTable).records}
        # a run just ended: not listed yet, or listed as running
        if shown.get(state.run_dir, events.RUNNING) == events.RUNNING:
            self.action_refresh()

    def action_refresh(self) -> None:
        self.scan(self.runs_root, list(self.extra_runs))

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs")
    def scan(self, root: Path, extra: list[Path]) -> None:
        records = runs.list_run_records(root, extra)
        self.from_worker(self.show_runs, records)

    def show_runs(self, records: list[dict]) -> None:
        self.query_one("#runs-table", MarkableTable).show_model(runs_list_model(records), widths={"name": NAME_WIDTH})

    @on(DataTable.RowSelected, "#runs-table")
    def action_open_run(self) -> None:
        record = self.query_one("#runs-table", MarkableTable).cursor_record()
        if record:
            self.post_message(self.Open(Path(record["path"]), getattr(self.app, "pane_switches", None)))

    def _two_marked_runs(self, key: str) -> tuple[dict, dict] | None:
        """The two marked rows when they are two different runs; else a notice and None."""
        table = self.query_one("#runs-table", MarkableTable)
        if len(table.marked) != 2:
            self.notify(f"Mark exactly two runs with space, then press {key}.", severity="warning")
            return None
        run_a, run_b = table.selected_records()
        if run_a.get("study") or run_b.get("study"):
            self.notify("That takes two runs; open a study (enter) to see its tables.", severity="warning")
            return None
        if Path(run_a["path"]).resolve() == Path(run_b["path"]).resolve():
            self.notify("Both marks are the same run; mark two different runs.", severity="warning")
            return None
        return run_a, run_b

    def action_compare(self) -> None:
        pair = self._two_marked_runs("c")
        if pair is None:
            return
        run_a, run_b = pair
        self.compared = (run_a["name"], run_b["name"])
        self.comparison = numbers.compare_summaries(run_a.get("summary") or {}, run_b.get("summary") or {})
        name_a, name_b = (f"{run['name']} ({run.get('model')})" for run in (run_a, run_b))
        self.query_one("#compare-title", Static).update(
            f"A = {name_a} · B = {name_b} · faster/slower: p < {vocab.ALPHA:g} over the processes' medians and a "
            f"change ≥ {vocab.MIN_EFFECT:.0%} and ≥ their spread, else within noise; 1 process each: noise unknown"
            + differences_line(run_a, run_b))
        self.query_one("#compare-table", MarkableTable).show_model(compare_model(self.comparison))
        self.add_class("-comparing")

    def action_rerun_interleaved(self) -> None:
        """The two marked runs' configs again, in fresh processes interleaved in time: drift cannot pose as a change."""
        pair = self._two_marked_runs("a")
        if pair is None:
            return
        config_a, config_b = ((run.get("summary") or {}).get("config") for run in pair)
        if not config_a or not config_b:
            self.notify("Both runs need their config (a run that finished or failed has one).", severity="warning")
            return
        self.post_message(self.Interleave(ab_command(config_a, config_b)))

    def report_paths(self) -> list[Path]:
        """The marked runs and studies, else the one under the cursor."""
        table = self.query_one("#runs-table", MarkableTable)
        records = table.selected_records() if table.marked else [table.cursor_record()]
        return [Path(record["path"]) for record in records if record]

    def export_table(self) -> ExportTable | None:
        if self.comparison:
            rows = self.query_one("#compare-table", MarkableTable).selected_records()
            name_a, name_b = self.compared  # a comparison belongs to neither run: it goes under the runs directory
            return ExportTable(f"compare-{name_a}-vs-{name_b}",
                               [{"A": name_a, "B": name_b, **{k: v for k, v in r.items() if k not in TEXT_KEYS}}
                                for r in rows], base=self.runs_root)
        records = self.query_one("#runs-table", MarkableTable).selected_records()
        return ExportTable("runs", [{k: v for k, v in r.items() if k != "summary"} | {"started": _when(r["started"])}
                                    for r in records], base=self.runs_root)  # the runs directory's table, no run's
