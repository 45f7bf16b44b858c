"""The app drives a runner and shows its steps: a fake runner (recorded events) and one real tiny run."""
import json
import sys
from pathlib import Path

import pytest
from textual.widgets import ProgressBar
from tui_helpers import workers_done

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.model.run_files import state_from_run_dir
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.live import StepTable

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=3, device="cpu")


def fake_factory(events="tiny_cpu_train.jsonl", *extra):
    def argv(cfg, run_dir):
        return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / events),
                "--run-dir", str(run_dir), *extra]
    return argv


def test_reducer_builds_state_from_recorded_events():
    import json
    state = RunState()
    for line in (DATA / "events" / "tiny_cpu_train.jsonl").read_text().splitlines():
        state = state.apply(json.loads(line))
    assert state.stage == "finished" and len(state.steps) == 3 and len(state.warmup_steps) == 2
    assert state.summary["phases"]["step"]["n"] == 3 and state.env["device_type"] == "cpu"
    assert state.apply({"event": "unknown"}) is state


async def test_run_key_streams_events_into_the_step_table(tmp_path):
    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory(), initial=TINY)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+r")
        await workers_done(app)
        await pilot.pause()
        assert app.run_state.stage == "finished"
        table = app.query_one(StepTable)
        assert table.row_count == 5
        assert str(table.get_row_at(2)[0]) == "step 0"
        assert str(app.query_one("#stage-line").render()).startswith("ok · 3 measured steps · ")


@pytest.mark.slow
async def test_runner_dying_midway_is_reported_and_steps_kept(tmp_path):
    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory("tiny_cpu_train.jsonl", "--stop-after", "7"),
                     initial=TINY)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+r")
        await workers_done(app)
        await pilot.pause()
        assert app.run_state.stage == "failed" and app.run_state.error["kind"] == "killed"
        assert len(app.run_state.steps) == 1
        # The bar keeps the measured steps that finished (1 of 3), not 0%, and the line says how it ended.
        bar = app.query_one("#stage-progress", ProgressBar)
        assert (bar.progress, bar.total) == (1, 3)
        assert str(app.query_one("#stage-line").render()).startswith("killed · 1 of 3 measured steps · runner exited")
        run_dir = Path(app.run_state.run_dir)
        assert (run_dir / "summary.json").is_file() and (run_dir / "stderr.log").exists()


async def test_invalid_field_disables_run_with_reason(tmp_path):
    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory(), initial=TINY)
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one("#ctx").value = "0"
        await pilot.pause()
        assert app.query_one("#run").disabled
        assert "ctx must be a positive integer" in str(app.query_one("#config-error").render())
        assert app.query_one("#ctx").has_class("-invalid")


@pytest.mark.slow
async def test_real_tiny_run_through_the_real_runner(tmp_path):
    app = build_app(runs_dir=str(tmp_path), initial=TINY)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+r")
        await workers_done(app)
        await pilot.pause()
        assert app.run_state.stage == "finished", app.run_state.error
        reopened = state_from_run_dir(Path(app.run_state.run_dir))
        assert reopened.summary == app.run_state.summary and len(reopened.steps) == 3
    record = json.loads((Path(app.run_state.run_dir) / "app.json").read_text())
    assert record["started_from"] == "app" and record["redraws_per_s_at_most"] == 1  # while steps arrive
    assert "ui_cpu_pct_while_measured" in record  # None when all 3 steps came in one read: too short to say


class Clocks:
    """The process's CPU clock and the wall clock, moved by the test: the load a host puts on the app is no part of
    what is checked."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def process_time(self) -> float:
        return self.cpu

    def monotonic(self) -> float:
        return self.wall

    def spend(self, cpu_s: float, wall_s: float) -> None:
        self.cpu += cpu_s
        self.wall += wall_s


def test_the_apps_own_load_is_its_cpu_over_the_measured_wall_time(monkeypatch):
    from sysprof.tui.model import own_load

    clocks = Clocks()
    monkeypatch.setattr(own_load, "time", clocks)
    load = own_load.MeasuredLoad()
    for stage, cpu_s, wall_s in (("warmup", 5.0, 5.0), ("measured", 0.6, 2.0), ("measured", 0.1, 0.5),
                                 ("finished", 3.0, 1.0), ("measured", 0.1, 1.5), ("failed", 9.0, 9.0)):
        load.stage(stage)
        clocks.spend(cpu_s, wall_s)
    assert own_load.MeasuredLoad().percent() is None
    assert load.percent() == pytest.approx(100 * (0.6 + 0.1 + 0.1) / (2.0 + 0.5 + 1.5))  # the measured stretches only


@pytest.mark.slow
async def test_a_run_with_repeats_shows_the_spread_between_its_processes(tmp_path):
    from dataclasses import replace

    from sysprof.tui.app import APP_REPEATS, default_config

    assert default_config().repeats == APP_REPEATS > 1  # the app measures in fresh processes by default
    app = build_app(runs_dir=str(tmp_path), initial=replace(TINY, repeats=2))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+r")
        await workers_done(app)
        await pilot.pause()
        assert app.run_state.stage == "finished", app.run_state.error
        assert app.run_state.summary["repeats"]["ok"] == 2
        shown = str(app.query_one("#live-throughput").render())
        assert "2 processes: step" in shown and "between them, CV" in shown
        assert "repeat 2/2 ok: step median" in shown  # the second process's notice


@pytest.mark.slow
async def test_live_shows_the_warnings_a_run_stored(tmp_path, monkeypatch):
    """A real run whose session read a loaded host (the load average injected: a test cannot load a machine on
    cue), opened offline: Live lists its warnings with their cause and remedy."""
    import os

    from sysprof.profiler_core.session.passes import Session

    monkeypatch.setattr(os, "getloadavg", lambda: (os.cpu_count() + 4.0, 0.0, 0.0))
    run_dir = tmp_path / "run"
    Session(TINY, run_dir, lambda event: None).run()
    app = build_app(runs_dir=str(tmp_path), open_runs=[run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(50):
            await pilot.pause(0.1)
            shown = str(app.query_one("#live-warnings").render())
            if shown:
                break
        assert f"⚠ host CPU load {os.cpu_count() + 4.0:.1f} over {os.cpu_count()} cores" in shown


async def test_ranks_are_capped_at_the_visible_gpus_in_configure(tmp_path):
    from sysprof.tui.panes.configure import ConfigurePane

    app = build_app(runs_dir=str(tmp_path), argv_factory=fake_factory(), initial=RunConfig(model="tiny"))
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(ConfigurePane).visible_gpus = 1  # as on a node with one GPU
        app.query_one("#nproc").value = "2"
        await pilot.pause()
        assert app.query_one("#run").disabled and app.query_one("#nproc").has_class("-invalid")
        assert "--nproc 2 needs one GPU per rank; 1 visible here" in str(app.query_one("#config-error").render())


@pytest.mark.slow
async def test_two_cpu_ranks_from_the_app_show_each_ranks_step(tmp_path):
    from dataclasses import replace

    app = build_app(runs_dir=str(tmp_path), initial=replace(TINY, nproc=2, steps=2))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+r")
        await workers_done(app)
        await pilot.pause()
        assert app.run_state.stage == "finished", app.run_state.error
        text = str(app.query_one("#live-throughput").render())
        assert "2 ranks (ddp · batch 2 per rank; above: rank 0)" in text and "rank 1: step " in text
        assert "(fwd " in text
        assert (Path(app.run_state.run_dir) / "ranks" / "01" / "summary.json").is_file()
