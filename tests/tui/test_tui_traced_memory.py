"""The Memory screen on a traced job's memory steps (tests/data/trace/memory-h100, analysed as `sysprof trace`
analyses it after the job): the peak, and the timeline lettered by the loop's own phases, its data phase among
them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tui_helpers import settle, text, until_opened

from sysprof.trace.settle import recorded_memory
from sysprof.tui.app import build_app

RUN = Path(__file__).resolve().parents[1] / "data" / "trace" / "memory-h100"


async def test_the_memory_screen_shows_the_recorded_steps_by_the_loops_own_phases(tmp_path):
    run_dir = tmp_path / RUN.name
    shutil.copytree(RUN, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps(summary | {"memory": recorded_memory(run_dir, summary, 1)}))
    app = build_app(runs_dir=str(tmp_path), open_runs=[run_dir])
    async with app.run_test(size=(100, 30)) as pilot:
        await until_opened(app, pilot, run_dir)
        await settle(app, pilot, "4")
        screen = " ".join(text(app).split())
        assert "peak 155.37 MiB in optimizer step 0" in screen and "D/F/B/O: phase starts" in screen, screen[:1500]
        plot = app.query_one("#memory-timeline").render().plain
        assert all(letter in plot for letter in "DFBO"), plot
