"""The Studies screen's table view: the current table of the study's table models (t: the next one), its main
figure in the table's place (f), and the advisor's answer above it."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from textual.widgets import Static

from sysprof.profiler_core.api import vocab
from sysprof.profiler_core.tables.model import TableModel
from sysprof.tui.widgets.tables import MarkableTable

if TYPE_CHECKING:
    from textual.widget import Widget

    class _Host(Widget):
        """What the mixin uses of the pane it is mixed into."""

        tables: dict[str, TableModel]
        table_index: int
        figure: Any
else:
    _Host = object


class StudyTableView(_Host):
    """Mixed into StudiesPane, which holds `tables` (title → model), `table_index` and `figure`."""

    def show_answer(self) -> None:
        recommended = self.answer_row()
        answer = recommended.get("answer")
        self.set_class(bool(answer), "-answered")
        use = " [dim](u: use it in Configure)[/dim]" if recommended.get("command") else ""
        self.query_one("#study-answer", Static).update(f"[b]answer[/b]: {escape(answer)}{use}" if answer else "")

    def show_table(self) -> None:
        model = self.current_table()
        title = model.title if model else ""
        table = self.query_one("#study-table", MarkableTable)
        if model is None:
            table.show({}, [])
        else:
            table.show_model(replace(model, columns=model.shown_columns()))
        count = f" ({self.table_index + 1}/{len(self.tables)}, t: next)" if len(self.tables) > 1 else ""
        if self.has_class("-figure") and self.figure:
            title, count = self.figure[0], " (f: back to the table)"
        elif self.figure:
            count += " · f: figure"
        self.query_one("#study-table-title", Static).update(f"[b]{escape(title)}[/b]{count}" if title else "")

    def action_toggle_figure(self) -> None:
        """The study's main figure (the report's, drawn here) in the table's place, and back."""
        if self.figure is None:
            self.notify("No figure for this study's tables (attention, warm-up, scaling, speed-ups and model sizes "
                        "have one).", severity="warning")
            return
        self.toggle_class("-figure")
        self.show_table()

    def current_table(self) -> TableModel | None:
        return list(self.tables.values())[self.table_index] if self.tables else None

    def answer_row(self) -> dict:
        """The advisor's answer (its recommended table's row), or {} where the study has none."""
        model = self.tables.get(vocab.RECOMMENDED_TABLE)
        return dict(model.rows[0]) if model and model.rows else {}

    def action_next_table(self) -> None:
        if self.tables:
            self.table_index = (self.table_index + 1) % len(self.tables)
            self.show_table()
