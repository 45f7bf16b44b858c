"""The app's run lifecycle: a run's session started and followed, a run or study re-attached, events applied as
one redraw a batch, a cancel that waits in a worker. Mixed into the App, which owns the state these change."""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work

from sysprof.profiler_core.api import RunConfig, RunDirError, control, events, runs
from sysprof.tui.model.own_load import MeasuredLoad
from sysprof.tui.model.run_files import state_from_run_dir
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.studies import StudiesPane

STEPS_REDRAW_S = 1.0  # while only steps arrive, Live redraws at most this often (apply_events)

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App

    class _RunHost(App):
        """What the mixin uses of the App it is mixed into."""

        run_state: RunState
        unshown_state: RunState | None
        shown_at: float
        load: MeasuredLoad
        control: control.ProcessControl
        argv_factory: Callable[[RunConfig, Path], list[str]]

        def action_show_pane(self, pane: str) -> None: ...
else:
    _RunHost = object


class RunActions(_RunHost):
    """Mixed into the App: needs run_state, the process control, the argv factory and action_show_pane()."""

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
