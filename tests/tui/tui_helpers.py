"""Pilot helpers the app tests share."""
from sysprof.tui.screen_text import screen_lines


async def settle(app, pilot, *keys):
    """Press the keys, each followed by the workers it started, then let the screen redraw."""
    await pilot.pause()
    for key in keys:
        await pilot.press(key)
    await app.workers.wait_for_complete()
    await pilot.pause()
    for _ in range(250):  # a pane just shown takes the focus after a refresh; the next keys go to it (5 s at most)
        if not app.focus_pending:
            break
        await pilot.pause(0.02)


def text(app) -> str:
    return "\n".join(screen_lines(app))


async def wait_until(pilot, condition, what: str, limit_s: float = 30.0) -> None:
    """Poll the condition while the app runs (a callback after a refresh may land later on a loaded machine)."""
    for _ in range(int(limit_s * 10)):
        if condition():
            return
        await pilot.pause(0.1)
    raise AssertionError(what)
