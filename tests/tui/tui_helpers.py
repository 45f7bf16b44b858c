"""Pilot helpers the app tests share."""
import contextlib

from textual.worker import WorkerCancelled, WorkerState

from sysprof.tui.screen_text import screen_lines


async def settle(app, pilot, *keys):
    """Press the keys, each once the focus the one before moved has landed (on a loaded machine a key pressed before
    the pane it opens has the focus goes elsewhere), then wait for the workers they started and the redraw."""
    await pilot.pause()
    for key in keys:
        await pilot.press(key)
        await focus_settled(app, pilot)
    await quiet(app, pilot)


async def quiet(app, pilot) -> None:
    """The workers' ends, a redraw and the focus, again while a worker is left running: a pane a key built starts its
    loads from its mount, which on a loaded machine can come after the workers were first waited for."""
    for _ in range(20):
        await workers_done(app)
        await pilot.pause()
        await focus_settled(app, pilot)
        if all(worker.is_finished for worker in app.workers):
            return


async def focus_settled(app, pilot) -> None:
    """A pane just shown takes the focus after a refresh; the next keys go to it (5 s at most)."""
    for _ in range(250):
        if not app.focus_pending:
            return
        await pilot.pause(0.02)


async def workers_done(app) -> None:
    """The ends of the app's workers; one a newer worker of its group replaced ends cancelled, which is no failure.
    One not started yet is passed over (it cannot be waited for): quiet() looks again after a pause."""
    for worker in list(app.workers):
        if worker.state == WorkerState.PENDING:
            continue
        with contextlib.suppress(WorkerCancelled):
            await worker.wait()


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
