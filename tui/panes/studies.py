"""Studies: run a sweep or one of the seed reports' studies as `python -m sysprof.profiler_core … --events`, follow
its cells with an ETA, and show its tables (rebuilt from the study directory, so a saved one opens offline)."""
from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, ProgressBar, Select, Static

from sysprof.profiler_core.api import (
    ConfigError,
    RunConfig,
    SysprofError,
    configs,
    control,
    events,
    gpus,
    studies,
)
from sysprof.profiler_core.tables.figure_data import Panel
from sysprof.profiler_core.tables.model import TableModel, main_figure
from sysprof.tui.keys import pane_bindings
from sysprof.tui.model.run_files import short_path
from sysprof.tui.model.study_commands import last_line, study_argv, study_choices
from sysprof.tui.model.study_state import StudyState
from sysprof.tui.panes.base import ExportTable, Pane
from sysprof.tui.panes.study_table_view import StudyTableView
from sysprof.tui.reporting import ReportActions
from sysprof.tui.widgets.study_plot import StudyPlot
from sysprof.tui.widgets.tables import MarkableTable, OutOfViewCells


class StudiesPane(StudyTableView, ReportActions, Pane):
    BINDINGS = pane_bindings("Studies")
    study: reactive[StudyState] = reactive(StudyState, always_update=True, init=False)
    tables: reactive[dict[str, TableModel]] = reactive(dict, always_update=True, init=False)  # title → table

    class Ended(Message):
        """A study this pane followed has ended: Runs lists it without being asked (g)."""

    def __init__(self, runs_root: Path, process_control: control.ProcessControl, **kwargs):
        super().__init__(**kwargs)
        self.runs_root = runs_root
        self.templates = study_choices(on_gpu=gpus.gpu_count() > 0)
        self.picked_template = next(iter(self.templates.values()))  # the list's first value, in the line at start
        self.table_index = 0
        self.control = process_control
        self.figure: tuple[str, Panel] | None = None  # (the table it is drawn from, its first panel)

    def compose(self) -> ComposeResult:
        yield Static("pick a study or type a sweep · enter start · ctrl+g cancel · t table · e export",
                     id="study-help")
        with Horizontal(id="study-controls"):
            yield Select([(label, command) for label, command in self.templates.items()], allow_blank=False,
                         id="study-template", compact=True)
            yield Input(next(iter(self.templates.values())), id="study-command", compact=True)
        yield Static(StudyState().progress_line(), id="study-progress")
        yield ProgressBar(id="study-bar", show_eta=False)
        yield Static(id="study-answer")  # the advisor's answer, whole (wrapped), whichever table is shown
        yield Static(id="study-table-title")
        yield MarkableTable(id="study-table")
        yield OutOfViewCells("study-table", id="study-more")
        yield StudyPlot(id="study-plot")

    def focus_main(self) -> None:
        """The list of studies until there is a table to read; then the table, so t, space and e work. Never the
        command line: a digit pressed next would be typed into it instead of switching screens."""
        target = "#study-table" if self.tables or self.study.stage != "idle" else "#study-template"
        self.query_one(target).focus()

    @on(Select.Changed, "#study-template")
    def template_chosen(self, event: Select.Changed) -> None:
        # Only a change of template fills the line: the list announces its first value after mounting, and on a
        # loaded machine that can land after a command given from elsewhere (Configure's A/B or Advise), which it
        # must not replace. While a study runs, the line keeps the command it runs.
        if event.value == self.picked_template:
            return
        self.picked_template = str(event.value)
        if not self.study.running:
            self.query_one("#study-command", Input).value = str(event.value)

    def start_command(self, command: str) -> None:
        """Start a command given from elsewhere (Runs' A/B): shown in the command line, then started."""
        if self.study.running:
            self.notify("A study is running: cancel it (ctrl+g) first.", severity="warning")
            return
        self.query_one("#study-command", Input).value = command
        self.action_start_study()

    @on(Input.Submitted, "#study-command")
    def action_start_study(self) -> None:
        if self.study.running:
            self.notify("A study is running: cancel it (ctrl+g) first.", severity="warning")
            return
        try:
            argv = study_argv(self.query_one("#study-command", Input).value, self.runs_root)
            self.runs_root.mkdir(parents=True, exist_ok=True)
        except (ValueError, OSError) as exc:
            self.notify(str(exc), title="Cannot start study", severity="error")
            return
        self.study, self.tables = StudyState(stage="running"), {}
        self.query_one("#study-table").focus()
        self.run_study(argv)

    @work(exclusive=True, exit_on_error=False, group="study")
    async def run_study(self, argv: list[str]) -> None:
        log = control.study_log(self.runs_root)
        log_start = log.stat().st_size if log.exists() else 0
        # Its stdout to a file of its own, not a pipe: the study outlives the app (it re-attaches from the
        # study's directory, whose event file holds the same events).
        stdout = self.runs_root / f".study-events-{os.getpid()}.jsonl"  # one study at a time per app
        try:
            stdout.write_bytes(b"")
            returncode = await self.control.run_followed(control.STUDY, argv, log, stdout, self.on_study_events,
                                                         events.STUDY_EVENTS, stdout_path=stdout)
        except OSError as exc:
            returncode, log_start = None, -1
            self.notify(f"cannot start the study: {exc}", severity="error")
        finally:
            stdout.unlink(missing_ok=True)  # a study still running keeps writing to it, unseen: harmless
        said = last_line(log, log_start) if log_start >= 0 else ""
        self.study = self.study.ended(returncode, said)
        if self.study.directory:
            self.load_tables(Path(self.study.directory))
        if self.study.stage == "failed" and self.is_on_screen:  # back to the line to fix it: typed text stays text
            self.query_one("#study-command", Input).focus()
        self.post_message(self.Ended())

    def on_study_events(self, batch: list[dict]) -> None:
        study = self.study
        for event in batch:
            study = study.apply(event)
        self.study = study  # one redraw for the batch
        # a stage's start too: the advisor writes its plan between its diagnosis and its candidates
        if any(event["event"] in (events.CELL_DONE, events.STUDY) for event in batch) and study.directory:
            self.load_tables(Path(study.directory))

    @work(exclusive=True, exit_on_error=False, group="study")
    async def attach_study(self, live: control.LiveProcess) -> None:
        """Follow a study an earlier app started: its events so far, replayed, then as they come."""
        directory = live.directory
        self.study, self.tables = StudyState(stage="running", directory=str(directory)), {}
        await self.control.attach(control.STUDY, live, control.events_file(directory), self.on_study_events,
                                  events.STUDY_EVENTS)
        left_behind = control.live_process(directory)  # still marked: it died without unmarking itself
        died = control.settle_died(left_behind) if left_behind is not None else None
        record = studies.study_record(directory) or {}
        finished = record.get("finished", 0) >= record.get("cells", 1)
        message = "" if finished else died or "the study ended before all its cells ran; finished cells are kept"
        self.study = replace(self.study, stage="finished" if finished else "failed", current="", message=message)
        self.load_tables(directory)
        self.post_message(self.Ended())

    def open_study(self, path: Path) -> None:
        if self.study.running:
            self.notify("A study is running: cancel it (ctrl+g) before opening another.", severity="warning")
            return
        self.study = StudyState(stage="opened", directory=str(path), message=short_path(path))
        self.load_tables(path)

    @work(thread=True, exclusive=True, exit_on_error=False, group="study-tables")
    def load_tables(self, directory: Path) -> None:
        try:
            models, record = studies.study_models(directory), studies.study_record(directory) or {}
        except (SysprofError, OSError, KeyError, ValueError) as exc:
            self.app.call_from_thread(self.notify, f"cannot read {directory}: {exc}", severity="error")
            return
        self.from_worker(self.show_tables, {model.title: model for model in models}, record)

    def show_tables(self, tables: dict[str, TableModel], record: dict) -> None:
        if self.study.stage == "opened" and record:
            self.study = StudyState(stage="opened", kind=record["kind"], directory=record["path"],
                                    cells=record["cells"], pending=record["cells"], done=record["finished"],
                                    message=short_path(Path(record["path"])))
        self.tables = tables

    def watch_study(self, study: StudyState) -> None:
        self.query_one("#study-progress", Static).update(study.progress_line())
        self.query_one("#study-bar", ProgressBar).update(total=study.pending or None, progress=study.done)

    def watch_tables(self, tables: dict[str, TableModel]) -> None:
        self.table_index = min(self.table_index, max(len(tables) - 1, 0))
        self.figure = main_figure(list(tables.values()))
        self.query_one("#study-plot", StudyPlot).draw(self.figure[1] if self.figure else None)
        if self.figure is None:
            self.remove_class("-figure")
        self.show_answer()
        self.show_table()

    class UseConfig(Message):
        """The advisor's answer, to show in Configure."""

        def __init__(self, config: RunConfig):
            super().__init__()
            self.config = config

    def action_use_answer(self) -> None:
        answer = self.answer_row()
        if not answer.get("command"):
            self.notify(answer.get("answer") or "No answer here: use it on an advise study that has one.",
                        severity="warning")
            return
        try:
            self.post_message(self.UseConfig(configs.config_from_command(answer["command"])))
        except ConfigError as exc:
            self.notify(str(exc), title="Cannot use the answer", severity="error")

    def report_paths(self) -> list[Path]:
        return [Path(self.study.directory)] if self.study.directory else []

    def export_table(self) -> ExportTable | None:
        model = self.current_table()
        if model is None:
            return None
        title = model.title
        name = re.sub(r"[^A-Za-z0-9.+]+", "-", title).strip("-").lower()
        directory = Path(self.study.directory) if self.study.directory else None
        return ExportTable(name, self.query_one("#study-table", MarkableTable).selected_records(), directory)
