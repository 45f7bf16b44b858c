"""sysprof-tui: configure a run, watch it live, read its kernel and memory tables, compare and export."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, TabbedContent, TabPane
from textual.worker import get_current_worker

from sysprof.profiler_core.api import RunConfig, RunDirError, control, events, gpus, runs, studies
from sysprof.tui.exporting import TableExportActions
from sysprof.tui.keys import GLOBAL_KEYS, PANE_KEYS, PANES, bindings, delegated_pane_bindings
from sysprof.tui.model.own_load import MeasuredLoad
from sysprof.tui.model.run_files import state_from_run_dir
from sysprof.tui.model.settings import default_settings_path, load_last_config, save_last_config
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.base import Pane
from sysprof.tui.panes.configure import ConfigurePane
from sysprof.tui.panes.help import HelpPane
from sysprof.tui.panes.kernels import KernelsPane
from sysprof.tui.panes.live import WAITING_FOR_NVML, LivePane
from sysprof.tui.panes.memory import MemoryPane
from sysprof.tui.panes.runs import RunsPane
from sysprof.tui.panes.studies import StudiesPane
from sysprof.tui.widgets.modals import ConfirmQuit

ArgvFactory = Callable[[RunConfig, Path], list[str]]
STEPS_REDRAW_S = 1.0  # while only steps arrive, Live redraws at most this often (apply_events)
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


class SysprofApp(TableExportActions, App):
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

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key in GLOBAL_KEYS:
            yield SystemCommand(key.label, f"{key.help or key.label} [{key.keys}]", self.action_callback(key.action))
        for key in PANE_KEYS:
            for scope in key.scope.split(", "):
                yield SystemCommand(f"{scope}: {key.label}", f"{key.help} [{key.keys}]",
                                    self.pane_callback(scope.lower(), key.action))

    def action_callback(self, action: str) -> Callable[[], None]:
        return lambda: self.call_next(self.run_action, action)

    def pane_callback(self, pane: str, action: str) -> Callable[[], None]:
        def run() -> None:
            self.action_show_pane(pane)
            self.call_next(self.action_pane, action)
        return run

    def current_pane(self) -> Pane | None:
        """The visible pane; None while a modal is up, the app is being torn down or the pane is being built."""
        if not self.screen_stack:  # a tab event can arrive after the last screen left
            return None
        tabs = self.screen.query("#panes")
        panes = self.screen.query(f"#pane-{tabs.first(TabbedContent).active}") if tabs else None
        return panes.first(Pane) if panes else None

    def action_show_pane(self, pane: str) -> None:
        tabs = self.screen.query("#panes")
        if pane in PANES and tabs and tabs.first(TabbedContent).active != pane:
            self.build_pane(tabs.first(TabbedContent).get_pane(pane))
            # A focused widget that is hidden hands focus to a sibling in its own pane, which switches the tabs
            # back (TabbedContent follows focus): let go of it first; pane_shown focuses the new pane.
            self.screen.set_focus(None)
            tabs.first(TabbedContent).active = pane

    def action_cycle_pane(self, step: int) -> None:
        tabs = self.screen.query("#panes")
        if tabs:
            current = PANES.index(tabs.first(TabbedContent).active)
            self.action_show_pane(PANES[(current + step) % len(PANES)])

    def build_pane(self, tab: TabPane | None) -> None:
        """Mount a pane's content the first time it is shown; before the switch, so focus has a place to go."""
        if tab is not None and not tab.children and tab.id in self.pane_factories:
            tab.mount(self.pane_factories[tab.id]())

    @on(TabbedContent.TabActivated)
    def pane_shown(self, event: TabbedContent.TabActivated) -> None:
        self.build_pane(event.pane)  # a click on a tab comes here without action_show_pane
        pane = self.current_pane()
        if pane is not None:
            self.focus_pending = True
            self.call_after_refresh(self.focus_if_still_shown, pane)

    def focus_if_still_shown(self, pane: Pane) -> None:
        """Focusing a pane that was left meanwhile would switch back to it (TabbedContent follows focus),
        and two panes doing that to each other flip the tabs back and forth."""
        self.focus_pending = False
        if self.current_pane() is pane:
            pane.focus_main()

    def action_pane(self, action: str) -> None:
        pane = self.current_pane()
        if pane is not None and hasattr(pane, f"action_{action}"):
            self.call_next(pane.run_action, action)

    def action_leave_field(self) -> None:
        self.screen.set_focus(None)

    def open_run(self, path: Path) -> None:
        if self.run_state.running:
            self.notify("A run is in progress: cancel it (ctrl+g) before opening another.", severity="warning")
            return
        try:
            self.run_state = state_from_run_dir(path)
        except RunDirError as exc:
            self.notify(str(exc), title="Cannot open run", severity="error")

    def open_path(self, path: Path) -> None:
        """A run directory opens on Live, a sweep or study directory on Studies; one still running re-attaches."""
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
            self.call_after_refresh(self.action_show_pane, "live")

    @on(StudiesPane.Ended)
    def study_ended(self) -> None:
        for pane in self.query(RunsPane):  # built already: it lists the study now; else it will when built
            pane.action_refresh()

    @on(RunsPane.Open)
    def run_chosen(self, message: RunsPane.Open) -> None:
        self.open_path(message.path)

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

    @work(exclusive=True, exit_on_error=False, group="run")
    async def stream_run(self, cfg: RunConfig, run_dir: Path) -> None:
        self.load, self.unshown_state = MeasuredLoad(), None
        try:
            runs.note_app_start(run_dir, STEPS_REDRAW_S)
            returncode = await self.control.run_followed(control.RUN, self.argv_factory(cfg, run_dir),
                                                         control.run_log(run_dir), control.events_file(run_dir),
                                                         self.apply_events, events.RUN_EVENTS)
        except OSError as exc:
            self.notify(f"cannot start the runner: {exc}", severity="error")
            returncode = None
        # the session died without a last event: what it saved still counts
        last = control.end_of_run(run_dir, cfg, returncode, unfinished=self.run_state.running)
        if last is not None:
            self.apply_events([last])
        try:
            runs.note_app_load(run_dir, self.load.percent())
        except (OSError, RunDirError):
            pass  # a record of the app's own cost is not worth a failure

    def attach(self, live: control.LiveProcess) -> None:
        """Re-attach Live or Studies to a run or study that an earlier app (or the CLI) started."""
        if live.kind == "run":
            if self.run_state.running:
                self.notify("A run is in progress here: cancel it (ctrl+g) before attaching to another.",
                            severity="warning")
                return
            self.run_state = RunState(stage="starting", run_dir=str(live.directory), config=live.config,
                                      planned_steps=(live.config or {}).get("steps", 0))
            self.action_show_pane("live")
            self.follow_run(live)
        elif self.control.running(control.STUDY):
            self.notify("A study is in progress here: cancel it (ctrl+g) before attaching to another.",
                        severity="warning")
        else:
            self.action_show_pane("studies")
            self.call_after_refresh(self.query_one("#pane-studies", StudiesPane).attach_study, live)

    @work(exclusive=True, exit_on_error=False, group="run")
    async def follow_run(self, live: control.LiveProcess) -> None:
        self.unshown_state = None
        await self.control.attach(control.RUN, live, control.events_file(live.directory), self.apply_events,
                                  events.RUN_EVENTS)
        if self.run_state.running:  # it ended without a last event: it died while nobody watched
            self.notify(control.settle_died(live), severity="warning")
            self.run_state = state_from_run_dir(live.directory)

    def apply_events(self, batch: list[dict]) -> None:
        """A batch of the run's events (one read of its event file) as one new state: one redraw, not one per
        event; and while only steps arrive, at most one redraw per STEPS_REDRAW_S, so the screen stays quiet while
        they are measured (each redraw is CPU the run's own threads may need on a small machine)."""
        state = self.unshown_state or self.run_state
        for event in batch:
            state = state.apply(event)
        self.load.stage(state.stage)
        only_steps = all(event.get("event") in (events.STEP, events.WARMUP_STEP) for event in batch)
        if only_steps and time.monotonic() - self.shown_at < STEPS_REDRAW_S:
            self.unshown_state = state  # shown with the next batch: steps arrive every POLL_S while they run
            return
        self.unshown_state, self.shown_at = None, time.monotonic()
        self.run_state = state

    def action_cancel(self) -> None:
        """Cancel in a worker: waiting for the process to end (up to 30 s before a kill) must not freeze the app."""
        self.run_worker(self.cancel_and_wait(), group="cancel", exit_on_error=False)

    async def cancel_and_wait(self) -> None:
        slot = next((slot for slot in (control.RUN, control.STUDY) if self.control.running(slot)), None)
        if slot is None:
            return
        try:
            if slot == control.RUN:
                self.notify("Cancelling: SIGINT sent to the run's process group.")
            else:
                self.notify("Cancelling the study: the cells that finished stay.")
            await self.control.cancel(slot)
        except ProcessLookupError as exc:
            self.notify(f"Cannot cancel: {exc}", severity="warning")

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
