"""sysprof-tui: configure a run, watch it live, read its kernel and memory tables, compare and export."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widgets import Button, Footer, Header, TabbedContent, TabPane
from textual.worker import get_current_worker

from sysprof.profiler_core.api import RunConfig, RunDirError, control, gpus, runs, studies
from sysprof.tui.exporting import TableExportActions
from sysprof.tui.keys import GLOBAL_KEYS, bindings, delegated_pane_bindings
from sysprof.tui.model.own_load import MeasuredLoad
from sysprof.tui.model.run_files import state_from_run_dir
from sysprof.tui.model.settings import default_settings_path, load_last_config, save_last_config
from sysprof.tui.model.state import RunState
from sysprof.tui.navigation import PaneNavigation
from sysprof.tui.panes.configure import ConfigurePane
from sysprof.tui.panes.help import HelpPane
from sysprof.tui.panes.kernels import KernelsPane
from sysprof.tui.panes.live import WAITING_FOR_NVML, LivePane
from sysprof.tui.panes.memory import MemoryPane
from sysprof.tui.panes.runs import RunsPane
from sysprof.tui.panes.studies import StudiesPane
from sysprof.tui.running import RunActions
from sysprof.tui.widgets.modals import ConfirmQuit

ArgvFactory = Callable[[RunConfig, Path], list[str]]
TELEMETRY_PERIOD_S = 0.5  # ≤ 2 Hz: NVML calls are cheap, but the UI thread must never wait on them


APP_REPEATS = 3  # the fewest processes that show a spread between them, and a verdict (Welch) can use


def default_config() -> RunConfig:
    """small on a GPU node; tiny on CPU so the first run finishes in seconds. Three fresh processes: on a shared
    node one process's numbers hide run-to-run noise, and compare needs the spread between processes."""
    if gpus.gpu_count() > 0:
        return RunConfig(repeats=APP_REPEATS)
    return RunConfig(model="tiny", ctx=64, warmup=2, steps=5, device="cpu", repeats=APP_REPEATS)


def default_argv(cfg: RunConfig, run_dir: Path) -> list[str]:
    """The session: the clean pass, then the profiled and memory passes the config asks for."""
    return control.session_argv(cfg, run_dir)


class SysprofApp(PaneNavigation, RunActions, TableExportActions, App):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live in other folders
    TITLE = "sysprof"
    BINDINGS = bindings(GLOBAL_KEYS) + delegated_pane_bindings()

    run_state: reactive[RunState] = reactive(RunState, always_update=True)
    telemetry: reactive[gpus.GpuTelemetry] = reactive(lambda: gpus.GpuTelemetry(missing=WAITING_FOR_NVML))

    def __init__(self, runs_dir: str | None = None, argv_factory: ArgvFactory = default_argv,
                 open_runs: list[Path] | None = None, initial: RunConfig | None = None,
                 settings_path: Path | None = None, sample_gpu: bool = True, live_inspect: bool = False):
        """live_inspect: Configure inspects the model in a torch process as the form changes (the entry point
        turns it on; tests that do not look at it leave it off, so their frames do not wait on a process)."""
        super().__init__()
        self.runs_root = runs.runs_root(runs_dir)
        self.argv_factory, self.open_runs, self.sample_gpu = argv_factory, open_runs or [], sample_gpu
        self.settings_path, self.live_inspect = settings_path, live_inspect
        remembered, self.settings_notice = load_last_config(settings_path) if initial is None else (None, None)
        self.initial = initial or remembered or default_config()
        self.pending: tuple[RunConfig | None, dict] = (None, {"config": "not checked yet"})
        self.control = control.ProcessControl()  # owns every process the app starts
        self.load = MeasuredLoad()  # the app's CPU while the run it follows measures its steps
        self.unshown_state: RunState | None = None  # steps read but not drawn yet (apply_events)
        self.shown_at = 0.0
        self.focus_pending = False  # a pane was shown and takes the focus after the next refresh

    def compose(self) -> ComposeResult:
        yield Header()
        initial = "live" if self.open_runs else "configure"
        panes = {
            "configure": lambda: ConfigurePane(self.initial, self.runs_root, self.live_inspect,
                                               id="pane-configure").data_bind(SysprofApp.run_state),
            "live": lambda: LivePane(id="pane-live").data_bind(SysprofApp.run_state, SysprofApp.telemetry),
            "kernels": lambda: KernelsPane(id="pane-kernels").data_bind(SysprofApp.run_state),
            "memory": lambda: MemoryPane(id="pane-memory").data_bind(SysprofApp.run_state),
            "runs": lambda: RunsPane(self.runs_root, self.open_runs, id="pane-runs").data_bind(SysprofApp.run_state),
            "studies": lambda: StudiesPane(self.runs_root, self.control, id="pane-studies"),
            "help": lambda: HelpPane(id="pane-help"),
        }
        self.pane_factories = panes
        with TabbedContent(initial=initial, id="panes"):
            for number, (name, make) in enumerate(panes.items(), start=1):
                with TabPane(f"{number} {name.capitalize()}", id=name):
                    # Live is where every run ends up; the rest are built when first shown (build_pane), so
                    # the first frame comes sooner.
                    if name in (initial, "live"):
                        yield make()
        yield Footer()

    def on_mount(self) -> None:
        if self.open_runs:
            self.open_path(self.open_runs[0])
        if self.settings_notice:
            self.notify(self.settings_notice, severity="warning")
        if self.sample_gpu:
            self.sample_telemetry()
        self.announce_in_progress()

    def announce_in_progress(self) -> None:
        """Runs and studies an earlier app (or the CLI) left running: Runs lists them and enter re-attaches. The
        ones whose process is gone are written down as died, so nothing shows as running forever."""
        running = []
        for live in control.in_progress(self.runs_root):
            if live.alive:
                running.append(live.directory.name)
            else:
                self.notify(control.settle_died(live), title="Died while nobody watched", severity="warning",
                            timeout=10)
        if running:
            names = ", ".join(running[:2]) + (f" and {len(running) - 2} more" if len(running) > 2 else "")
            self.notify(f"Still running: {names}. Runs (5) lists them; enter re-attaches.", timeout=10)

    @on(TabbedContent.TabActivated)
    def pane_shown(self, event: TabbedContent.TabActivated) -> None:
        # Here, not in PaneNavigation: Textual registers @on handlers only from the App's own class body.
        self.build_pane(event.pane)  # a click on a tab comes here without action_show_pane
        pane = self.current_pane()
        if pane is not None:
            self.focus_pending = True
            self.call_after_refresh(self.focus_if_still_shown, pane)

    def open_run(self, path: Path) -> None:
        if self.run_state.running:
            self.notify("A run is in progress: cancel it (ctrl+g) before opening another.", severity="warning")
            return
        try:
            self.run_state = state_from_run_dir(path)
        except RunDirError as exc:
            self.notify(str(exc), title="Cannot open run", severity="error")

    def open_path(self, path: Path, switches: int | None = None) -> None:
        """A run directory opens on Live, a sweep or study directory on Studies; one still running re-attaches.
        switches: the pane switches counted when the user asked (a pane chosen since is kept)."""
        live = control.live_process(path)
        if live is not None and live.alive:
            self.attach(live)
            return
        if live is not None:  # marked, but its process is gone: say so and write it down before showing it
            self.notify(control.settle_died(live), title="Died while nobody watched", severity="warning")
        if studies.study_kind(path) is not None:
            self.action_show_pane("studies")
            # the pane may have been built just now: its widgets exist after the next refresh
            self.call_after_refresh(self.query_one("#pane-studies", StudiesPane).open_study, path)
        else:
            self.open_run(path)
            # After the refresh the new run state causes (panes rebuild their tables): switched before it, the
            # tab change was sometimes lost.
            self.call_after_refresh(self.show_pane_unless_moved, "live",
                                    self.pane_switches if switches is None else switches)

    @on(StudiesPane.Ended)
    def study_ended(self) -> None:
        for pane in self.query(RunsPane):  # built already: it lists the study now; else it will when built
            pane.action_refresh()

    @on(RunsPane.Open)
    def run_chosen(self, message: RunsPane.Open) -> None:
        self.open_path(message.path, message.switches)

    @on(RunsPane.Interleave)
    @on(ConfigurePane.Interleave)
    @on(ConfigurePane.Advise)
    def start_on_studies(self, message: RunsPane.Interleave | ConfigurePane.Interleave | ConfigurePane.Advise) -> None:
        self.action_show_pane("studies")
        self.call_after_refresh(self.query_one("#pane-studies", StudiesPane).start_command, message.command)

    @on(StudiesPane.UseConfig)
    def use_answer(self, message: StudiesPane.UseConfig) -> None:
        built = self.query("#pane-configure")
        if not built:  # the form is made on first show: made with the answer (and the form's own repeats)
            self.initial = replace(message.config, repeats=self.initial.repeats)
        self.action_show_pane("configure")
        if built:
            built.first(ConfigurePane).show_config(message.config)
        self.notify("The advisor's answer is in Configure: check it, then ctrl+r runs it.")

    @on(ConfigurePane.Changed)
    def config_changed(self, message: ConfigurePane.Changed) -> None:
        self.pending = (message.config, message.problems)

    @on(Button.Pressed, "#run")
    def action_run(self) -> None:
        cfg, problems = self.pending
        if cfg is None and not self.screen.query("#pane-configure"):
            self.action_show_pane("configure")  # opened on a saved run: the form is built on first show
            self.notify("Check the configuration, then run (ctrl+r).")
            return
        if self.run_state.running or cfg is None:
            if problems:
                self.notify(next(iter(problems.values())), title="Cannot run", severity="warning")
            return
        try:
            run_dir = runs.new_run_dir(self.runs_root, cfg)
        except RunDirError as exc:
            self.notify(str(exc), title="Cannot start run", severity="error")
            return
        notice = save_last_config(self.settings_path, cfg)
        if notice:
            self.notify(notice, severity="warning")
        self.run_state = RunState(stage="starting", run_dir=str(run_dir), planned_steps=cfg.steps,
                                  config=cfg.to_dict())
        self.action_show_pane("live")
        self.stream_run(cfg, run_dir)

    async def action_quit(self) -> None:
        if not self.run_state.running and not self.control.running():
            self.exit()
            return

        async def answered(choice: str | None) -> None:
            if choice == ConfirmQuit.CANCEL:
                await self.cancel_and_wait()  # the app goes only once its run has
            if choice in (ConfirmQuit.CANCEL, ConfirmQuit.LEAVE):
                self.exit()
        self.push_screen(ConfirmQuit(), answered)

    @work(thread=True, exclusive=True, exit_on_error=False, group="telemetry")
    def sample_telemetry(self) -> None:
        worker, sampler = get_current_worker(), gpus.NvmlSampler()
        opened = sampler.open()
        try:
            while not worker.is_cancelled:
                self.call_from_thread(setattr, self, "telemetry", sampler.sample())
                if not opened:  # no NVML: one all-N/A sample is the whole story
                    return
                worker.cancelled_event.wait(TELEMETRY_PERIOD_S)
        finally:
            sampler.close()


def build_app(runs_dir: str | Path | None = None, open_runs: Iterable[Path] = (), *, for_user: bool = False,
              **options: Any) -> SysprofApp:
    """The one way the app is made: by the entry point (for_user: the remembered settings file, GPU telemetry, the
    model inspected live as the form changes) and by the tests and benchmarks, which get none of those unless they
    ask in `options` (SysprofApp's own), so no frame waits on a process and no user's settings are read."""
    defaults: dict[str, Any] = ({"settings_path": default_settings_path(), "sample_gpu": True, "live_inspect": True}
                                if for_user else {"sample_gpu": False})
    return SysprofApp(runs_dir=None if runs_dir is None else str(runs_dir), open_runs=list(open_runs),
                      **(defaults | options))


def entry_point(argv: list[str] | None = None) -> None:
    from sysprof.tui.cli import parse_args

    args = parse_args(sys.argv[1:] if argv is None else argv)
    build_app(args.runs_dir, args.run_dirs, for_user=True).run()
