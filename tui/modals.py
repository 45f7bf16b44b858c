"""Modal dialogs: export a table to a file (or the clipboard), and confirm quitting during a run."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from profiler_core.render.export import ExportError, write_table
from tui.panes.base import ExportTable


class ExportModal(ModalScreen[str | None]):
    """Type a path; the suffix picks the format (.csv .md .json .tex). Dismisses with the written path."""

    BINDINGS = [Binding("escape", "dismiss_nothing", "Close"), Binding("ctrl+y", "copy", "Copy as Markdown")]

    def __init__(self, table: ExportTable, default_path: Path, copy_table: Callable[[ExportTable], None]):
        super().__init__()
        self.table, self.default_path, self.copy_table = table, default_path, copy_table

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Label(f"Export {self.table.name}: {len(self.table.records)} rows "
                        "(marked rows if any, else the whole table)")
            yield Input(str(self.default_path), id="export-path")
            yield Static("format from the suffix: .csv .md .json .tex · enter save · ctrl+y copy · esc close",
                         id="export-hint")
            yield Static(id="export-error")
            with Horizontal(id="export-buttons"):
                yield Button("Save", id="export-save", variant="primary", compact=True)
                yield Button("Copy (Markdown)", id="export-copy", compact=True)
                yield Button("Close", id="export-close", compact=True)

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export-save")
    def save(self) -> None:
        try:
            written = write_table(self.table.records, self.query_one("#export-path", Input).value.strip())
        except ExportError as exc:
            self.query_one("#export-error", Static).update(str(exc))
            return
        self.dismiss(str(written))

    @on(Button.Pressed, "#export-copy")
    def action_copy(self) -> None:
        self.copy_table(self.table)
        self.dismiss(None)

    @on(Button.Pressed, "#export-close")
    def action_dismiss_nothing(self) -> None:
        self.dismiss(None)


class ConfirmQuit(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label("A run is in progress. Cancel it and quit? (y / n)")
            with Horizontal():
                yield Button("Cancel run and quit (y)", id="confirm-yes", variant="error", compact=True)
                yield Button("Keep running (n)", id="confirm-no", compact=True)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
