"""Help: every key binding (from tui.keys, so it cannot drift from the bindings) and how verdicts work."""
from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from sysprof.profiler_core.api import vocab
from sysprof.tui.keys import GLOBAL_KEYS, PANE_KEYS, key_label
from sysprof.tui.panes.base import Pane

NOTES = (
    "Text fields keep plain letters and digits: ctrl/F-keys work everywhere; press Esc to leave a field.",
    "Every action is also in the command palette (ctrl+p).",
    f"Compare verdict: B is faster/slower than A only when a test on the processes' medians finds a difference "
    f"(p < {vocab.ALPHA:g}) and B/A differs from 1 by ≥ {vocab.MIN_EFFECT:.0%} and by ≥ the spread between processes; "
    f"otherwise 'within noise' and why. One process against several: tested against their spread. One process per "
    f"side: run-to-run noise is unknown, so never faster/slower but 'noise unknown' when the steps' "
    f"{vocab.NOISE_SIGMAS:g}σ alone would say so: use --repeats {vocab.SUGGESTED_REPEATS}.",
    "Copy uses OSC 52; inside tmux set `set -g set-clipboard on` (or `allow-passthrough on`).",
    "Profiled-pass step times are shown apart (profiled median, inflation), never as the step times.",
)


def keys_table() -> Table:
    table = Table(box=None, padding=(0, 2), header_style="bold", show_edge=False)
    table.add_column("key", no_wrap=True)
    table.add_column("where", no_wrap=True)
    table.add_column("does")
    for key in (*GLOBAL_KEYS, *PANE_KEYS):
        table.add_row(key_label(key.keys), key.scope, key.help or key.label)
    return table


class HelpPane(Pane):
    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Static(keys_table(), id="help-keys")
            yield Static("\n".join(f"• {note}" for note in NOTES), id="help-notes")

    def focus_main(self) -> None:
        """The scroll holds the focus, so Down, PageDown and End move through the help at once."""
        self.query_one("#help-scroll", VerticalScroll).focus()
