"""The quit dialog reads whole at 80×24: its question wraps at the dialog's edge, never cut mid-word."""
from __future__ import annotations

import html
import re

from sysprof.tui.app import build_app
from sysprof.tui.widgets.modals import ConfirmQuit


def screen_text(svg: str) -> str:
    return " ".join(html.unescape(re.sub("<.*?>", "", part)).replace("\xa0", " ")
                    for part in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))


async def test_the_quit_question_is_whole_at_80_columns():
    app = build_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ConfirmQuit())
        await pilot.pause()
        words = " ".join(screen_text(app.export_screenshot()).split())
    assert "re-attaches), cancel it," in words and "or stay?" in words  # its last words are on screen
