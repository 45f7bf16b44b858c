"""Modal dialogs: export a table to a file (or the clipboard), and confirm quitting during a run."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from sysprof.profiler_core.render.export import ExportError, write_table
from sysprof.tui.panes.base import ExportTable


class ExportModal(ModalScreen[str | None]):
    """Type a path; the suffix picks the format (.csv .md .json .tex). Dismisses with the written path."""

    BINDINGS = [Binding("escape", "dismiss_nothing", "Close"), Binding("ctrl+y", "copy", "Copy as Markdown")]

    def __init__(self, table: ExportTable, default_path: Path, copy_table: Callable[[ExportTable], None]):
        super().__init__()
        self.table, self.default_path, self.copy_table = table, default_path, copy_table

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            count = len(self.table.records)
            yield Static(f"Export {escape(self.table.name)}: {count} row{'' if count == 1 else 's'} (marked rows if "
                         "any, else the whole table)", id="export-title")  # a Static wraps a long name; a Label cuts
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


class ConfirmQuit(ModalScreen[str]):
    """Quitting during a run: leave it running (the default: a run outlives the app; `sysprof-tui` re-attaches),
    cancel it, or stay."""

    LEAVE, CANCEL, STAY = "leave", "cancel", "stay"
    BINDINGS = [Binding("l,enter", "answer('leave')", "Leave running"), Binding("c", "answer('cancel')", "Cancel run"),
                Binding("n,escape", "answer('stay')", "Stay")]

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label("A run is in progress. Quit and leave it running (sysprof-tui re-attaches), cancel it, "
                        "or stay?")
            with Horizontal():
                yield Button("Leave running (l)", id=f"confirm-{self.LEAVE}", variant="primary", compact=True)
                yield Button("Cancel run (c)", id=f"confirm-{self.CANCEL}", variant="error", compact=True)
                yield Button("Stay (n)", id=f"confirm-{self.STAY}", compact=True)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss((event.button.id or "").removeprefix("confirm-"))

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer)
