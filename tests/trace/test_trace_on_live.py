"""A traced loop opened in the app: Live's step table has a column for each of its phases, and its findings (here
input-bound: the data phase waits most of each step) are on the screen with what they rest on."""
from __future__ import annotations

import time

import pytest

from sysprof.trace.starting import new_tracker

pytestmark = pytest.mark.slow  # the whole app


def waiting_loop(runs) -> object:
    """Twelve steps on the host's clock whose data phase sleeps 4 ms against 1 ms of work: input-bound."""
    tracker = new_tracker("waits", runs, tokens_per_step=8, warmup=1, device="cpu", memory_every=10)
    for _ in range(12):
        with tracker.step():
            with tracker.phase("data"):
                time.sleep(0.004)
            with tracker.phase("forward"):
                time.sleep(0.001)
    tracker.finish()
    return tracker.run_dir


async def test_a_traced_loop_shows_its_phases_and_findings_on_live(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
    from tui_helpers import settle, text

    from sysprof.tui.app import build_app

    run_dir = waiting_loop(tmp_path / "runs")
    app = build_app(runs_dir=str(tmp_path / "runs"), open_runs=[run_dir])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot, "2")
        shown = " ".join(text(app).split())
        assert "● input-bound: the loop waits" in shown and "rests on the 'data' phase timed" in shown
        from sysprof.tui.panes.live import StepTable

        table = app.query_one(StepTable)
        assert [column.label.plain for column in table.ordered_columns] == [
            "step", "wall", "data", "forward", "backward", "optimizer"]
        charted = {series: len(app.query_one(f"#chart-{series}").data) for series in ("wall", "data", "eval")}
        assert charted == {"wall": 12, "data": 12, "eval": 0}  # 1 warm-up + 11 measured; no evaluation here
        assert app.query_one("#chart-row-data").display and not app.query_one("#chart-row-eval").display
