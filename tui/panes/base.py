"""What every pane shares: the run state bound from the app, and an optional table to export."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable

from tui.state import RunState


@dataclass(frozen=True)
class ExportTable:
    name: str  # file stem for the default export path
    records: list[dict]
    base: Path | None = None  # where exports/ goes by default (else the open run's directory)


class Pane(Vertical):
    run_state: reactive[RunState] = reactive(RunState, always_update=True, init=False)

    def focus_main(self) -> None:
        """Focus the pane's first table so its keys (space, enter, s …) work at once."""
        tables = self.query(DataTable)
        if tables:
            tables.first().focus()

    def export_table(self) -> ExportTable | None:
        """The table on screen (marked rows, else all), or None when this pane shows none."""
        return None
