"""Text widgets updated without a full redraw of the screen when nothing about their size changed.

Why: `Static.update` lays the whole screen out again, and a layout re-renders every widget on it. Live updates
its texts with every read of the run's events (4 a second), and a layout each time cost the app 47% of a core
while a tiny CPU run measured (headless, 80×24): CPU the measured run then lacks on a small machine.
"""
from __future__ import annotations

from collections.abc import Hashable

from rich.text import Text
from textual.widgets import Static

SHOWN = "_sysprof_shown"  # (key, height) of what the widget shows, kept on the widget


def update_quietly(widget: Static, content: object, key: Hashable, height: int) -> None:
    """Show content unless what it shows (key) is already there; lay the screen out again only when its height
    (lines, wrapped at the widget's width) differs from what it had."""
    shown = getattr(widget, SHOWN, None)
    if shown is not None and shown[0] == key:
        return
    widget.update(content, layout=shown is None or shown[1] != height)  # type: ignore[arg-type]
    setattr(widget, SHOWN, (key, height))


def wrapped_height(markup: str, width: int) -> int:
    """The lines a markup string takes at this width (each line wrapped on its own)."""
    lines = Text.from_markup(markup).plain.split("\n")
    return sum(max(1, -(-len(line) // width)) for line in lines) if width > 0 else len(lines)


def update_text(widget: Static, markup: str) -> None:
    """A markup string, quietly (update_quietly)."""
    update_quietly(widget, markup, markup, wrapped_height(markup, widget.content_size.width))
