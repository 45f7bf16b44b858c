"""The screen as plain text lines (for tests, and for notes taken over SSH without a screenshot viewer)."""
from __future__ import annotations

from textual.app import App


def screen_lines(app: App) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]
