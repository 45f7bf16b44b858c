"""sysprof-tui: pick a configuration, run it in the runner subprocess, watch the steps arrive."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Button, Checkbox, Footer, Header, Input, Label, Select

from profiler_core import rundir
from profiler_core.config import RunConfig, config_problems
from profiler_core.launch import mark_killed, runner_argv
from profiler_core.nvml import gpu_count
from tui.runner_client import RunnerClient
from tui.state import RunState
from tui.widgets import ConfigForm, RunStatus, StepTable

ArgvFactory = Callable[[RunConfig, Path], list[str]]


def default_config() -> RunConfig:
    """small on a GPU node; tiny on CPU so the first run finishes in seconds."""
    if gpu_count() > 0:
        return RunConfig()
    return RunConfig(model="tiny", ctx=64, warmup=2, steps=5, device="cpu")


def state_from_run_dir(path: Path) -> RunState:
    """A saved run, shown exactly as a live one would be at its end."""
    record = rundir.load_run(path)
    summary = record.summary or {}
    return RunState(stage="finished" if record.status == "ok" else "failed", run_dir=str(path),
                    env=record.manifest.get("env"), summary=summary or None, error=summary.get("error"),
                    warmup_steps=tuple(s for s in record.steps if s.get("kind") == "warmup"),
                    steps=tuple(s for s in record.steps if s.get("kind") == "measured"),
                    planned_steps=record.manifest.get("config", {}).get("steps", 0))


class SysprofApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "sysprof"
    BINDINGS = [
        Binding("r", "run", "Run"),
        Binding("c", "cancel", "Cancel run"),
        Binding("q", "quit", "Quit"),
    ]

    run_state: reactive[RunState] = reactive(RunState, always_update=True)

    def __init__(self, runs_dir: str | None = None, argv_factory: ArgvFactory = runner_argv,
                 open_runs: list[Path] | None = None, initial: RunConfig | None = None):
        super().__init__()
        self.runs_root = rundir.runs_root(runs_dir)
        self.argv_factory = argv_factory
        self.open_runs = open_runs or []
        self.initial = initial or default_config()
        self.client: RunnerClient | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            yield ConfigForm(self.initial, id="config")
            with Vertical(id="results"):
                yield RunStatus(id="status").data_bind(SysprofApp.run_state)
                yield StepTable(id="steps").data_bind(SysprofApp.run_state)
        yield Footer()

    def on_mount(self) -> None:
        if self.open_runs:
            try:
                self.run_state = state_from_run_dir(self.open_runs[0])
            except rundir.RunDirError as exc:
                self.notify(str(exc), title="Cannot open run", severity="error")
        self.check_config()

    def current_config(self) -> tuple[RunConfig | None, dict[str, str]]:
        try:
            cfg = RunConfig.from_dict(self.query_one(ConfigForm).values())
        except ValueError as exc:
            return None, {"config": str(exc)}
        return cfg, config_problems(cfg)

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def check_config(self) -> None:
        cfg, problems = self.current_config()
        for field in self.query_one(ConfigForm).query("Input, Select"):
            field.set_class(field.id in problems, "-invalid")
        self.query_one("#config-error", Label).update(next(iter(problems.values()), ""))
        self.query_one("#run", Button).disabled = bool(problems) or self.run_state.running

    @on(Button.Pressed, "#run")
    def action_run(self) -> None:
        cfg, problems = self.current_config()
        if problems or cfg is None or self.run_state.running:
            return
        try:
            run_dir = rundir.new_run_dir(self.runs_root, cfg)
        except rundir.RunDirError as exc:
            self.notify(str(exc), title="Cannot start run", severity="error")
            return
        self.run_state = RunState(stage="starting", run_dir=str(run_dir), planned_steps=cfg.steps)
        self.stream_run(cfg, run_dir)

    @work(exclusive=True, exit_on_error=False)
    async def stream_run(self, cfg: RunConfig, run_dir: Path) -> None:
        self.client = RunnerClient(self.argv_factory(cfg, run_dir), run_dir)
        self.check_config()
        try:
            returncode = await self.client.stream(self.apply_event)
        except OSError as exc:
            self.notify(f"cannot start the runner: {exc}", severity="error")
            returncode = None
        if self.run_state.running:  # the runner died without a last event
            summary = mark_killed(run_dir, cfg, returncode)
            self.apply_event({"event": "failed", **summary["error"], "summary": summary})
        self.check_config()

    def apply_event(self, event: dict) -> None:
        self.run_state = self.run_state.apply(event)

    async def action_cancel(self) -> None:
        if self.client and self.run_state.running:
            await self.client.cancel()


def entry_point() -> None:
    open_runs = [Path(arg) for arg in sys.argv[1:]]
    SysprofApp(open_runs=open_runs).run()
