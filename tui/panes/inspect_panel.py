"""The model as the runner would build it: inspected on the meta device in its own process (never in the app,
which must not import torch or the user's code), a moment after the Configure form stops changing."""
from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual import work
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from sysprof.profiler_core.api import RunConfig, SysprofError, control
from sysprof.profiler_core.render.inspect_report import flops_lines, memory_table, modules_table, params_line

SETTLE_S = 0.6  # typing "2048" must start one inspector, not four
MODULE_DEPTH = 2


def report_renderable(report) -> Group:
    lines = [Text(params_line(report)), *(Text(line) for line in flops_lines(report))]
    notes = [Text(f"note: {note}", style="yellow") for note in report["notes"]]
    return Group(*lines, memory_table(report), modules_table(report), *notes)


class InspectPanel(Static):
    class Inspected(Message):
        """An inspection ended: the config inspected and why it cannot run (None: the model built)."""

        def __init__(self, config: RunConfig, problem: str | None):
            super().__init__()
            self.config, self.problem = config, problem

    def __init__(self, runs_root: Path, **kwargs):
        super().__init__(**kwargs)
        self.runs_root = runs_root
        self.wanted: RunConfig | None = None  # the config shown, being inspected or waiting for the form to settle
        self.timer: Timer | None = None

    def request(self, cfg: RunConfig | None, again: bool = False) -> None:
        """Inspect cfg once the form settles; None (the form is invalid) clears the panel. again: even when cfg is
        the one shown (its code changed on disk)."""
        if cfg is not None and cfg == self.wanted and not again:
            return
        self.stop()
        self.wanted = cfg
        if cfg is None:
            self.update("")
        else:
            self.timer = self.set_timer(SETTLE_S, self.start)

    def hold(self, reason: str) -> None:
        """Stop inspecting (and kill a running inspector) until the next request; say why."""
        self.stop()
        self.wanted = None
        self.update(Text(reason, style="dim"))

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.stop()
        self.workers.cancel_group(self, "inspect")

    def start(self) -> None:
        if self.wanted is not None:
            self.inspect(self.wanted)

    @work(exclusive=True, exit_on_error=False, group="inspect")
    async def inspect(self, cfg: RunConfig) -> None:
        self.update(Text(f"inspecting {cfg.model_name} on the meta device…", style="dim"))
        argv = control.inspect_argv(cfg, MODULE_DEPTH)
        try:  # cancelled when the form changes again: this answer is stale, and its process is stopped
            done = await control.run_to_end(argv, control.INSPECT_TIMEOUT_S)
        except OSError as exc:  # no python to start, no memory to fork: said on the panel, the app goes on
            self.show_problem(cfg, control.inspector_not_started(exc, argv))
            return
        except TimeoutError:  # a factory that waits on something (a download): no verdict, so Run is not held
            self.update(Text(f"inspect: no answer in {control.INSPECT_TIMEOUT_S:.0f} s; stopped", style="yellow"))
            self.post_message(self.Inspected(cfg, None))
            return
        try:
            report = control.read_inspect_output(done.stdout, done.stderr, done.returncode, self.runs_root)
        except SysprofError as exc:
            self.show_problem(cfg, exc)
        else:
            self.update(report_renderable(report))
            self.post_message(self.Inspected(cfg, None))

    def show_problem(self, cfg: RunConfig, problem: SysprofError) -> None:
        self.update(Text(f"inspect: {problem}", style="red"))
        self.post_message(self.Inspected(cfg, f"inspect: {problem}"))
