"""The report key (w) on Runs and Studies: `sysprof report` of what is selected, in its own process (figures need
matplotlib, tables pandas; neither belongs in the app), then a notice saying where it went or why it did not."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import work

from sysprof.profiler_core.api import control
from sysprof.tui.model.run_files import short_path

REPORT_TIMEOUT_S = 600

if TYPE_CHECKING:
    from sysprof.tui.panes.base import Pane

    class _ReportHost(Pane):
        """What the mixin uses of the pane it is mixed into."""

        runs_root: Path
else:
    _ReportHost = object


class ReportActions(_ReportHost):
    """Mixed into a pane that has runs_root and report_paths() (the directories to report on)."""

    def report_paths(self) -> list[Path]:
        raise NotImplementedError

    def action_write_report(self) -> None:
        paths = self.report_paths()
        if not paths:
            self.notify("Nothing to report on here: pick a run or study first.", severity="warning")
            return
        target = control.report_target(self.runs_root)
        self.notify(f"writing the report of {len(paths)} director{'y' if len(paths) == 1 else 'ies'} …")
        self.write_report(paths, target)

    @work(exit_on_error=False, group="report")
    async def write_report(self, paths: list[Path], target: Path) -> None:
        try:
            done = await control.run_to_end(control.report_argv(paths, target), REPORT_TIMEOUT_S)
        except OSError as exc:
            self.notify(f"no report: {exc}", severity="error")
            return
        except TimeoutError:
            self.notify(f"no report: it took longer than {REPORT_TIMEOUT_S:.0f} s", severity="error")
            return
        said = done.stderr.strip().splitlines()
        if done.returncode == 0:  # its own line: "wrote PATH (N tables, M figures; figures in …)"
            self.notify(said[-1] if said else f"wrote {short_path(target)}", title="Report")
        else:
            reason = (said or [f"sysprof report exited with {done.returncode}"])[-1]
            self.notify(reason, title="No report", severity="error")
