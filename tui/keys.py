"""Every key of the app in one table: the bindings, the Help screen and the command palette read it.

Global actions that must work while a text field has focus use control or function keys (a plain letter
would be typed into the field). Screens switch with 1–7 when no field has focus (Esc or Enter leaves a field),
and with ctrl+PageDown / ctrl+PageUp anywhere. No screen puts the focus in a text field by itself, so a digit
pressed right after switching switches again instead of being typed. (Alt+digit is no help: Textual reads the
ESC-digit a terminal sends for it as macOS option characters, alt+5 as "∞".)
"""
from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Key:
    keys: str  # Textual key names, comma separated
    action: str
    label: str  # footer and command palette
    help: str = ""  # the Help screen (label when empty)
    show: bool = False  # in the footer
    priority: bool = False  # works while an Input has focus
    scope: str = "all"


PANES = ("configure", "live", "kernels", "memory", "runs", "studies", "help")

GLOBAL_KEYS = (
    *(Key(str(number), f"show_pane('{pane}')", f"Show {pane.capitalize()}")
      for number, pane in enumerate(PANES, start=1)),
    Key("ctrl+pagedown", "cycle_pane(1)", "Next screen", "Show the next screen (works while typing)",
        priority=True),
    Key("ctrl+pageup", "cycle_pane(-1)", "Previous screen", "Show the previous screen (works while typing)",
        priority=True),
    Key("f1", "show_pane('help')", "Help", "Show Help (works while typing)", show=True, priority=True),
    Key("ctrl+r,f5", "run", "Run", "Run the configuration (works while typing)", show=True, priority=True),
    Key("ctrl+g,f6", "cancel", "Cancel", "Cancel the run or study: SIGINT to its process group, kill after 10 s",
        show=True, priority=True),
    Key("e,ctrl+s", "export", "Export", "Export the table on screen (marked rows, else all) to a file",
        show=True),
    Key("y", "copy", "Copy", "Copy the table on screen as Markdown to the clipboard (OSC 52)"),
    Key("escape", "leave_field", "Leave field", "Leave a text field (then 1–7 switch screens; Enter in a "
        "Configure field leaves it too)"),
    Key("q,ctrl+q", "quit", "Quit",
        "Quit; during a run it asks: l leaves it running (sysprof-tui re-attaches), c cancels it, n stays", show=True),
)

PANE_KEYS = (
    Key("ctrl+o", "pick_factory", "Pick model file", "Pick your model: a .py file, then a class or function in it "
        "(parsed, never run) fills model_factory", scope="Configure"),
    Key("ctrl+t,f7", "ab", "A/B", "Run the form's config (A) against it with the A/B field's options (B), "
        "interleaved in fresh processes (sysprof ab), on Studies", priority=True, scope="Configure"),
    Key("ctrl+y,f8", "advise", "Advise", "Ask the advisor about the form's config: its candidates measured against "
        "it within the budget (sysprof advise), on Studies", priority=True, scope="Configure"),
    Key("space", "toggle_mark", "Mark", "Mark / unmark the row (export marked rows; compare two runs)",
        scope="Kernels, Memory, Runs"),
    Key("s", "next_sort", "Sort", "Sort by the next column (or click a header)", scope="Kernels"),
    Key("S", "reverse_sort", "Reverse", "Reverse the sort order", scope="Kernels"),
    Key("slash", "focus_filter", "Filter", "Filter kernels by name", scope="Kernels"),
    Key("p", "next_phase", "Phase", "Restrict to the next phase / attention sub-range", scope="Kernels"),
    Key("r", "next_rank", "Rank", "Show the next rank's kernel tables (--nproc with a profiler)", scope="Kernels"),
    Key("t", "next_table", "Table", "Next table (Kernels: kernels, module types; Memory: allocations, categories, "
        "module types, predicted; Studies: results, pivot, lab tables)", scope="Kernels, Memory, Studies"),
    Key("enter", "open_run", "Open", "Open the run under the cursor", scope="Runs"),
    Key("c", "compare", "Compare", "Compare the two marked runs (B/A per phase with a noise verdict)", scope="Runs"),
    Key("g", "refresh", "Rescan", "Rescan the runs root", scope="Runs"),
    Key("a", "rerun_interleaved", "A/B", "Run the two marked runs' configs again, interleaved (sysprof ab), on "
        "Studies", scope="Runs"),
    Key("f", "toggle_figure", "Figure", "Show the study's main figure in the table's place (the report's: attention "
        "time against sequence length, warm-up, speed-ups …), and back", scope="Studies"),
    Key("w", "write_report", "Report", "Write a report (sysprof report) of the marked runs and studies, else the "
        "one under the cursor (Runs), or of the study shown (Studies): Markdown with its figures, under the runs "
        "directory's reports/", scope="Runs, Studies"),
    Key("u", "use_answer", "Use answer", "Put the advisor's recommended config into Configure (an advise study)",
        scope="Studies"),
    Key("enter", "start_study", "Start", "Start the sweep or study in the command line (pick one from the list)",
        scope="Studies"),
)


def bindings(keys: tuple[Key, ...]) -> list[BindingType]:
    return [Binding(k.keys, k.action, k.label, show=k.show, priority=k.priority) for k in keys]


def delegated_pane_bindings() -> list[BindingType]:
    """App-level copies of the pane keys: they reach the visible pane even before focus has moved into it."""
    return [Binding(k.keys, f"pane('{k.action}')", k.label, show=False) for k in PANE_KEYS
            if k.keys not in ("space", "enter")]


def pane_bindings(scope_word: str) -> list[BindingType]:
    return bindings(tuple(k for k in PANE_KEYS if scope_word in k.scope))


def key_label(keys: str) -> str:
    return " / ".join(name.replace("slash", "/").replace("escape", "Esc") for name in keys.split(","))
