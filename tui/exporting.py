"""The app's export and copy actions: the visible pane's table to a file (ExportModal) or, as Markdown, to the
clipboard over OSC 52."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sysprof.profiler_core.api import runs
from sysprof.profiler_core.render.export import osc52, to_markdown
from sysprof.tui.panes.base import ExportTable
from sysprof.tui.widgets.modals import ExportModal

if TYPE_CHECKING:
    from textual.app import App

    from sysprof.tui.model.state import RunState
    from sysprof.tui.panes.base import Pane

    class _ExportHost(App):
        """What the mixin uses of the App it is mixed into."""

        runs_root: Path
        run_state: RunState

        def current_pane(self) -> Pane | None: ...
else:
    _ExportHost = object


class TableExportActions(_ExportHost):
    """Mixed into the App: needs current_pane(), run_state and runs_root."""

    def table_on_screen(self, verb: str) -> ExportTable | None:
        """The visible pane's table (marked rows, else all), or None with a notice saying so."""
        pane = self.current_pane()
        table = pane.export_table() if pane else None
        if table is None or not table.records:
            self.notify(f"No table on this screen to {verb}.", severity="warning")
            return None
        return table

    def action_export(self) -> None:
        table = self.table_on_screen("export")
        if table is None:
            return
        base = table.base or (Path(self.run_state.run_dir) if self.run_state.run_dir else self.runs_root)
        self.push_screen(ExportModal(table, runs.export_target(base, table.name), self.copy_table),
                         self.exported)

    def exported(self, path: str | None) -> None:
        if path:
            self.notify(f"wrote {path}", title="Exported")

    def action_copy(self) -> None:
        table = self.table_on_screen("copy")
        if table is not None:
            self.copy_table(table)

    def copy_table(self, table: ExportTable) -> None:
        """OSC 52, plus the tmux passthrough form inside tmux (one of them reaches the outer terminal)."""
        text = to_markdown(table.records)
        self.copy_to_clipboard(text)
        if os.environ.get("TMUX") and self._driver is not None:
            self._driver.write(osc52(text, tmux_passthrough=True))
        self.notify(f"copied {len(table.records)} rows as Markdown (OSC 52)")
