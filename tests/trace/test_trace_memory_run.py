"""A real `sysprof trace --memory-steps 12-13` run (tests/data/trace/memory-h100: plain_train.py on an H100, with the
allocator history the tracker dumped) analysed as `sysprof trace` analyses it after the job: phases from the loop's
own ranges (its data phase among them), the state allocated before the recording split as a `sysprof run`'s memory
pass splits it, and the run read by the commands that read a run's memory pass."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.trace.settle import recorded_memory

RUN = Path(__file__).resolve().parents[1] / "data" / "trace" / "memory-h100"
PEAK_ON_THE_GPU = 162_915_352  # the peak the analysis on the H100 read from this snapshot


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> tuple[Path, dict]:
    run_dir = tmp_path_factory.mktemp("memory") / "memory-h100"
    shutil.copytree(RUN, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    record = recorded_memory(run_dir, summary, 1)
    return run_dir, record


def test_the_recorded_steps_are_marked_and_left_out_of_the_loops_statistics():
    summary = json.loads((RUN / "summary.json").read_text())
    steps = [json.loads(line) for line in (RUN / "steps.jsonl").read_text().splitlines()]
    assert summary["memory_steps"] == [12, 13] and "steps 12-13 memory-recorded" in [f["text"] for f in
                                                                                      summary["findings"]]
    assert [s["index"] for s in steps if s.get("pass") == "memory"] == [12, 13]
    assert summary["phases"]["step"]["n"] == 20 - 3 - 2


def test_the_snapshot_is_analysed_with_the_loops_own_phases_and_the_state_split_as_a_runs(analysed):
    run_dir, record = analysed
    assert record["peak_allocated_bytes"] == PEAK_ON_THE_GPU and record["steps"] == [12, 13]
    assert record["analysis"] == "memory/analysis.json" and record["inflation"] > 0
    analysis = json.loads((run_dir / record["analysis"]).read_text())
    marks = [(mark["phase"], mark["step"]) for mark in analysis["timeline"]["phase_marks"]]
    assert marks == [(phase, step) for step in (0, 1) for phase in ("data", "forward", "backward", "optimizer")]
    by_category = analysis["max_by_category"]
    assert by_category["optimizer_state"] == 2 * by_category["parameters"] > 0  # AdamW: two states a parameter
    assert by_category["gradients"] == by_category["parameters"]
    assert any("traced loop's own" in note for note in analysis["notes"])
    assert analysis["peak"]["first_step_partial"] is False  # the recording began as the data phase opened step 12


def test_report_and_the_memory_table_read_the_traced_runs_memory(analysed):
    run_dir, record = analysed
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps(summary | {"memory": record}))
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "report", str(run_dir), "--output",
                           str(run_dir / "report.md")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = (run_dir / "report.md").read_text()
    assert "steps 12-13 memory-recorded" in text and "**memory by category**" in text
    assert "| optimizer_state | 37797896 |" in text and "| data | 0 | other | trace/plain_train.py:43" in text

