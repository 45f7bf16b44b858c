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


async def until_opened(app, pilot, run_dir, timeout: float = 60.0) -> None:
    """A run the app opened at its start is loaded (the app shows Live then): on a loaded machine that comes after
    the first keys, and would take the screen back from the pane they chose."""
    for _ in range(int(timeout / 0.05)):
        if app.run_state.run_dir == str(run_dir):
            await settle(app, pilot)
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{run_dir} did not open in {timeout:.0f} s")
