"""Runs outlive the app: quit and leave a run going, re-attach from a new app, cancel from it, see what died.

The fake runner replays recorded events and marks its directory as the session does; the cancel and the died
cases use real tiny CPU sessions (real torch), started in their own process group as the app starts them."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tui_helpers import settle

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.documents.liveness import live_process
from sysprof.profiler_core.session.process import session_argv
from sysprof.tui.app import build_app
from sysprof.tui.widgets.modals import ConfirmQuit

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=3, device="cpu")


def slow_fake(cfg, run_dir):
    """The recorded run, its last event held until the test lets it go (run_dir/../let-it-end)."""
    return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / "tiny_cpu_train.jsonl"),
            "--run-dir", str(run_dir), "--delay", "0.6", "--hold-last", str(Path(run_dir).parent / "let-it-end")]


def real_session(runs: Path, steps: int) -> tuple[subprocess.Popen, Path]:
    cfg = RunConfig.from_dict({**TINY.to_dict(), "steps": steps, "warmup": 1})
    run_dir = rundir.new_run_dir(runs, cfg)
    process = subprocess.Popen(session_argv(cfg, run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    return process, run_dir


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_for(pilot, condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.1)


def wait_until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def notices(app) -> str:
    return "\n".join(str(notification.message) for notification in app._notifications)


async def test_quit_leaving_the_run_and_a_new_app_reattaches_and_replays_it_to_the_end(tmp_path):
    first = build_app(runs_dir=str(tmp_path), argv_factory=slow_fake, initial=TINY)
    async with first.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: first.run_state.stage == "warmup")
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: isinstance(first.screen, ConfirmQuit))
        await pilot.press("l")
        await wait_for(pilot, lambda: first._exit)
    run_dir = next(tmp_path.iterdir())
    live = live_process(run_dir)
    assert live is not None and live.alive  # the app is gone, the run is not

    second = build_app(runs_dir=str(tmp_path))
    async with second.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert f"Still running: {run_dir.name}" in notices(second)
        second.open_path(run_dir)  # what enter on its row in Runs does
        # attached first (the run's last event is held until then, however long a loaded machine takes), then its end
        await wait_for(pilot, lambda: second.run_state.run_dir == str(run_dir))
        (tmp_path / "let-it-end").touch()
        await wait_for(pilot, lambda: not second.run_state.running)
        await settle(second, pilot)
        assert second.run_state.stage == "finished" and second.run_state.run_dir == str(run_dir)
        assert len(second.run_state.steps) == 3  # every step, the ones before the re-attach replayed
    first.control.processes["run"].process.wait(timeout=30)  # reaped here, as init reaps it once the app is gone
    assert live_process(run_dir) is None and not group_exists(live.pgid)


async def test_cancel_from_a_reattached_app_reaches_the_real_session(tmp_path):
    process, run_dir = real_session(tmp_path, steps=5000)
    try:
        wait_until(lambda: live_process(run_dir) is not None)
        app = build_app(runs_dir=str(tmp_path), open_runs=[run_dir])
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: len(app.run_state.steps) >= 2)
            assert app.run_state.running and app.screen.query_one("#pane-live").display
            await pilot.press("ctrl+g")
            await wait_for(pilot, lambda: not app.run_state.running)
            assert app.run_state.error["kind"] == events.CANCELLED
        assert process.wait(timeout=30) is not None and not group_exists(process.pid)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    summary = rundir.read_summary(run_dir)
    assert summary["error"]["kind"] == events.CANCELLED and summary["phases"]["step"]["n"] >= 2


async def test_a_run_whose_whole_group_was_killed_shows_as_died_never_running(tmp_path):
    process, run_dir = real_session(tmp_path, steps=5000)
    wait_until(lambda: sum(step["kind"] == "measured" for step in rundir.read_steps(run_dir)) >= 2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done = sum(step["kind"] == "measured" for step in rundir.read_steps(run_dir))
    app = build_app(runs_dir=str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "5")
        await wait_for(pilot, lambda: f"died at step {done} of 5000" in notices(app), timeout=30)  # a loaded machine
        records = app.query_one("#runs-table").records
        assert [(row["status"], row["state"]) for row in records] == [("failed", "died")]  # status: the contract's
    assert json.loads((run_dir / rundir.SUMMARY).read_text())["error"]["kind"] == events.DIED


async def test_an_unwritable_runs_directory_is_one_line_and_nothing_starts(tmp_path):
    (tmp_path / "a-file").write_text("")
    runs = tmp_path / "a-file" / "runs"  # even root cannot make a directory under a file
    app = build_app(runs_dir=str(runs), argv_factory=slow_fake, initial=TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "ctrl+r")
        assert f"cannot create a directory under {runs}: Not a directory" in notices(app)
        assert app.run_state.stage == "idle" and not app.control.running()


async def test_a_run_on_another_host_is_followed_but_never_signalled_from_here(tmp_path):
    from sysprof.profiler_core.documents.liveness import RUN
    from sysprof.profiler_core.session.control import Attached, ProcessControl
    from sysprof.profiler_core.session.live import Heartbeat

    Heartbeat(tmp_path, "run").start().stopped.set()
    record = json.loads((tmp_path / rundir.LIVE).read_text())
    rundir.write_json(tmp_path / rundir.LIVE, {**record, "host": "another-node", "pid": 1, "pgid": 1})
    live = live_process(tmp_path)
    assert live is not None and live.alive and not live.here  # a fresh heartbeat is all there is to judge by
    control = ProcessControl()
    control.processes[RUN] = Attached(live)
    with pytest.raises(ProcessLookupError, match="another host"):
        await control.cancel(RUN)


async def test_a_sweep_started_elsewhere_is_reattached_on_studies_and_followed_to_its_end(tmp_path, cli_env):
    sweep = subprocess.Popen([sys.executable, "-m", "sysprof.profiler_core", "sweep", "--model", "tiny",
                              "--device", "cpu", "--ctx", "16,32", "--batch", "2", "--warmup", "1", "--steps", "50",
                              "--events", "--runs-dir", str(tmp_path)], env=cli_env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lambda: any(live_process(path) for path in tmp_path.iterdir()))
        sweep_dir = next(path for path in tmp_path.iterdir() if live_process(path))
        app = build_app(runs_dir=str(tmp_path))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.open_path(sweep_dir)
            pane = app.query_one("#pane-studies")
            await wait_for(pilot, lambda: pane.study.stage not in ("idle", "running"), timeout=240)
            assert pane.study.stage == "finished" and pane.study.cells == 2 and pane.study.done == 2
            assert pane.study.directory == str(sweep_dir)
        assert sweep.wait(timeout=60) == 0
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    assert live_process(sweep_dir) is None
