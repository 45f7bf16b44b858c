"""What every pane shares: the run state bound from the app, and an optional table to export."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.worker import get_current_worker

from sysprof.tui.model.run_files import analysis_dir
from sysprof.tui.model.state import RunState


@dataclass(frozen=True)
class ExportTable:
    name: str  # file stem for the default export path
    records: list[dict]
    base: Path | None = None  # where exports/ goes by default (else the open run's directory)


class Pane(Vertical):
    run_state: reactive[RunState] = reactive(RunState, always_update=True, init=False)
    loaded_dir: Path | None = None  # the analysis directory this pane shows

    def from_worker(self, callback, *args) -> None:
        """A thread worker's result to the app, unless a newer worker of its group replaced it: an exclusive worker
        is cancelled, but its thread runs on to the end, and its late result would overwrite the newer one (on a
        loaded machine, a kernel table reset under a filter the user had typed)."""
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(callback, *args)

    def analysis_to_load(self, state: RunState, kind: str) -> Path | None:
        """The run's `kind` analysis directory when it is ready and not the one already shown (then it is)."""
        directory = analysis_dir(state, kind)
        ready = not state.running or state.analysis_path(kind) is not None
        if not ready or directory is None or directory == self.loaded_dir:
            return None
        self.loaded_dir = directory
        return directory

    def focus_main(self) -> None:
        """Focus the pane's first table so its keys (space, enter, s …) work at once."""
        tables = self.query(DataTable)
        if tables:
            tables.first().focus()

    def export_table(self) -> ExportTable | None:
        """The table on screen (marked rows, else all), or None when this pane shows none."""
        return None
