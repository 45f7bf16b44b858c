"""A run the app starts and the user cancels reads "cancelled" on Live and Runs (the words `sysprof run` prints), with
the steps it kept; Runs shows median step, mode, attention and steps, and its status and median step fit 80 columns.
A real tiny CPU session (real torch), started and cancelled from the app."""
import time
from pathlib import Path

import pytest
from textual.widgets import ProgressBar
from tui_helpers import settle, text

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.units import format_ms
from sysprof.tui.app import build_app

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
LONG = RunConfig(model="tiny", ctx=32, batch=2, warmup=1, steps=5000, device="cpu")


async def wait_for(pilot, condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.1)


@pytest.mark.slow
async def test_a_cancelled_run_says_cancelled_on_live_and_runs_with_the_steps_it_kept(tmp_path):
    app = build_app(runs_dir=str(tmp_path), initial=LONG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)  # the form has checked its config
        await pilot.press("ctrl+r")  # not settle: the run's worker ends with the run
        await wait_for(pilot, lambda: len(app.run_state.steps) >= 2)
        assert app.run_state.state_name == "running"
        assert str(app.query_one("#stage-line").render()).startswith("running · measured ")
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: not app.run_state.running)
        await pilot.pause()
        done = app.run_state.kept_steps  # the summary's count: a cancel may keep a step whose event it never sent
        assert done - len(app.run_state.steps) in (0, 1)
        line = str(app.query_one("#stage-line").render())
        assert line.startswith(f"cancelled · {done} of 5000 measured steps · stopped by SIGINT · ")
        bar = app.query_one("#stage-progress", ProgressBar)
        assert (bar.progress, bar.total) == (done, 5000)  # the steps that finished, not 0%

        await settle(app, pilot, "5")
        await wait_for(pilot, lambda: app.query_one("#runs-table").records)
        [record] = app.query_one("#runs-table").records
        await pilot.pause()
        summary = rundir.read_summary(Path(app.run_state.run_dir))
        assert (summary["status"], summary["state"]) == ("failed", "cancelled")  # the contract's status is kept
        assert (record["state"], record["steps"], record["mode"], record["attention"]) == ("cancelled", done,
                                                                                         "train", "naive")
        lines = text(app).splitlines()
        header = next(index for index, line in enumerate(lines) if line.split()[:2] == ["run", "status"])
        assert lines[header].split()[:6] == ["run", "status", "median", "step", "steps", "model"]
        row = lines[header + 1]  # status and median step on screen at 80 columns
        assert row.split()[1] == "cancelled" and f" {format_ms(record['step_median_ms'])} " in row
        assert "failed" not in text(app)


async def test_runs_lists_saved_runs_without_a_state_key_as_ok_with_the_new_columns():
    app = build_app(runs_dir=str(RUNS), open_runs=[RUNS / "tiny-ctx32"])
    async with app.run_test(size=(80, 24)) as pilot:
        # the opened run shows on Live once loaded (a while, on a loaded machine): Runs after that, not before
        await wait_for(pilot, lambda: app.run_state.run_dir == str(RUNS / "tiny-ctx32"))
        await settle(app, pilot, "5")
        await wait_for(pilot, lambda: app.query_one("#runs-table").records)
        table = app.query_one("#runs-table")
        assert [str(column.label) for column in table.columns.values()][1:] == [
            "run", "status", "median step", "steps", "model", "mode", "ctx", "batch", "dtype", "attention", "device"]
        by_name = {record["name"]: record for record in table.records}
        assert {name: record["state"] for name, record in by_name.items()} == {
            "small-h200-analyses": "ok", "tiny-ctx32": "ok", "tiny-ctx64": "ok"}
        assert (by_name["tiny-ctx32"]["steps"], by_name["small-h200-analyses"]["steps"]) == (5, 3)
        shown = text(app)
        assert "status" in shown and "median step" in shown and "1.472 s" in shown  # both fit at 80 columns
