"""The app must not take the CPU its runs need: while a real tiny CPU run measures its steps,
Live redraws at most once per STEPS_REDRAW_S, the screen is laid out again only when a size changes (a layout
re-renders every widget: one per read of the events had the app at 47% of a core; the step rows are made before the
steps come and the stage line keeps its length, so after the first redraw with steps no size changes), and the
app's own CPU over the measured steps stays within the budget docs/performance.md states."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from textual.screen import Screen
from textual.widget import Widget
from tui_helpers import settle

from sysprof.profiler_core.base.config import RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.panes.live import LivePane

APP_CPU_BUDGET_PCT = 15  # of one core, over the measured steps (docs/performance.md: "The app stays out of the way")
REDRAWS_PER_S = 1  # Live's redraws while only steps arrive (the app's STEPS_REDRAW_S: a change must be meant)
MEASURED = RunConfig(model="tiny", ctx=32, batch=2, warmup=2, steps=300, device="cpu")


@pytest.mark.slow
async def test_while_steps_arrive_the_app_redraws_rarely_and_stays_within_its_cpu_budget(tmp_path, monkeypatch):
    counts = {"redraws": 0, "with_steps": 0, "layouts": 0}
    measuring = {"on": False}
    live_watch, layout = LivePane.watch_run_state, Screen._refresh_layout

    def counted_watch(self, state):
        measuring["on"] = state.stage == "measured"
        counts["redraws"] += measuring["on"]
        counts["with_steps"] += measuring["on"] and bool(state.steps)
        return live_watch(self, state)

    def counted_layout(self, *args, **kwargs):  # after the first redraw with measured steps: its new sizes are meant
        counts["layouts"] += measuring["on"] and counts["with_steps"] > 1
        return layout(self, *args, **kwargs)

    def named_refresh(self, *regions, layout=False, **kwargs):  # who asked for each layout, to name in a failure
        if layout and measuring["on"] and counts["with_steps"] > 1:
            asked.append(self.id or type(self).__name__)
        return refresh(self, *regions, layout=layout, **kwargs)

    asked: list[str] = []
    refresh = Widget.refresh
    monkeypatch.setattr(LivePane, "watch_run_state", counted_watch)
    monkeypatch.setattr(Screen, "_refresh_layout", counted_layout)
    monkeypatch.setattr(Widget, "refresh", named_refresh)
    app = build_app(runs_dir=str(tmp_path / "runs"), initial=MEASURED)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "ctrl+r")
        while app.run_state.stage in ("idle", "starting") or app.run_state.running:
            await pilot.pause(0.2)
    assert app.run_state.stage == "finished"
    run_dir = Path(app.run_state.run_dir)
    record = json.loads((run_dir / "app.json").read_text())
    measured_s = sum(step["wall_ms"] for step in app.run_state.steps) / 1e3
    assert counts["redraws"] <= measured_s * REDRAWS_PER_S + 3, counts
    assert counts["with_steps"] >= 3, counts  # enough redraws after the first for a layout per redraw to show
    # then cells change, not sizes; the footer alone may lay itself out once more: its keys change as the run starts,
    # and how soon the measured steps follow depends on how fast the runner starts (a forked one starts at once)
    by_others = [name for name in asked if not name.startswith("Footer")]
    assert counts["layouts"] <= (1 if by_others else 2), (counts, asked)
    assert record["ui_cpu_pct_while_measured"] < APP_CPU_BUDGET_PCT, record


def measured(count: int) -> tuple:
    return tuple({"index": i, "wall_ms": 10.0 + i % 3, "phases_ms": {"forward": 3.0, "backward": 5.0,
                  "optimizer": 2.0 + i % 2}} for i in range(count))


@pytest.mark.slow  # six app sessions of about 5 s each on a 2-core machine
@pytest.mark.parametrize("device_chars", range(19, 25))  # the old stage line crossed 78 columns at 10 or 100 steps
async def test_live_lays_the_screen_out_for_the_first_steps_only_whatever_the_stage_lines_length(
        tmp_path, monkeypatch, device_chars):
    """Steps fed as the app reads them: the step rows are there before the first step, and after the first
    measured step no step changes a size (the stage line once rewrapped at 10 and at 100 steps on some hosts)."""
    from sysprof.tui.model.state import RunState
    from sysprof.tui.panes.live import StepTable

    asked, refresh = [], Widget.refresh

    def named_refresh(self, *regions, layout=False, **kwargs):  # every layout is asked for through a refresh
        if layout:
            asked.append(self.id or type(self).__name__)
        return refresh(self, *regions, layout=layout, **kwargs)

    monkeypatch.chdir(tmp_path)  # the line shows the run directory as runs/r: line and path share the first line
    monkeypatch.setattr(Widget, "refresh", named_refresh)
    app = build_app(runs_dir=str(tmp_path / "runs"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "2")
        device = {"device_name": "x" * device_chars}
        planned = RunState(stage="warmup", run_dir=str(tmp_path / "runs" / "r"), env=device,
                           config={"warmup": 2, "steps": 120}, stage_total=2)
        app.run_state = planned
        await pilot.pause()
        assert app.query_one(StepTable).row_count == 122
        for done in (1, 2, 9, 10, 11, 99, 100, 101, 120):
            app.run_state = replace(planned, stage="measured", stage_total=120, planned_steps=120,
                                    warmup_steps=measured(2), steps=measured(done))
            await pilot.pause()
            if done == 1:
                asked.clear()
        assert asked == []
