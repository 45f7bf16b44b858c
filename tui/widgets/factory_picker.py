"""The model factory picker: a folder tree of .py files; choosing one lists the classes and functions it defines
(parsed with ast, never imported); choosing one of those dismisses with `path.py:name` for --model-factory."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from sysprof.tui.model.factory_scan import Definition, ScanError, factory_spec, top_level_definitions

SKIPPED_FOLDERS = ("__pycache__", "node_modules")


class PythonFileTree(DirectoryTree):
    """Folders and .py files only; hidden folders and caches are left out (they hold no model)."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [path for path in paths if not path.name.startswith(".") and path.name not in SKIPPED_FOLDERS
                and (path.suffix == ".py" or path.is_dir())]


def definition_prompt(definition: Definition) -> Text:
    """`build(vocab_size, block_size, …)  function · line 58`: the parameters show what the dims can fill."""
    prompt = Text(definition.name, style="bold")
    prompt.append(f"({', '.join(definition.parameters)})")
    kind = f"class({definition.bases})" if definition.bases else definition.kind
    prompt.append(f"  {kind} · line {definition.line}", style="dim")
    return prompt


class FactoryPicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "close", "Close")]

    def __init__(self, root: Path):
        super().__init__()
        self.root = root
        self.file: Path | None = None  # the file whose definitions are listed

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog"):
            yield Label("Model factory: pick a .py file, then a class or function in it (the file is parsed, "
                        "never run) · enter open/pick · esc close")
            yield Input(str(self.root), id="picker-root", compact=True, tooltip="enter: show this folder")
            yield PythonFileTree(self.root, id="picker-tree")
            yield OptionList(id="picker-names")
            yield Static("choose a file", id="picker-note")

    def on_mount(self) -> None:
        self.query_one(PythonFileTree).focus()

    @on(Input.Submitted, "#picker-root")
    def show_folder(self, event: Input.Submitted) -> None:
        folder = Path(event.value.strip()).expanduser()
        if not folder.is_dir():
            self.query_one("#picker-note", Static).update(f"no such folder {folder}")
            return
        self.query_one(PythonFileTree).path = folder
        self.query_one(PythonFileTree).focus()

    @on(DirectoryTree.FileSelected)
    def list_definitions(self, event: DirectoryTree.FileSelected) -> None:
        names, note = self.query_one("#picker-names", OptionList), self.query_one("#picker-note", Static)
        names.clear_options()
        self.file = event.path
        try:
            found = top_level_definitions(event.path)
        except ScanError as exc:
            note.update(str(exc))
            return
        names.add_options([Option(definition_prompt(d), id=d.name) for d in found])
        note.update(f"{event.path.name}: {len(found)} classes and functions · enter picks one" if found else
                    f"{event.path.name} defines no class or function at its top level")
        if found:
            names.focus()

    @on(OptionList.OptionSelected, "#picker-names")
    def pick(self, event: OptionList.OptionSelected) -> None:
        if self.file is not None and event.option.id is not None:
            self.dismiss(factory_spec(self.file, event.option.id))

    def action_close(self) -> None:
        self.dismiss(None)
