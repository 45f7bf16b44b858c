"""Live's step table for a traced loop: a column per phase the loop timed, the data phase first, the usual three
kept ("—" where the loop has none), and any phase of the user's own named, in the order it first came."""
from __future__ import annotations

import json

from sysprof.profiler_core.tables.step_rows import step_cells, step_columns, step_phases
from sysprof.trace.starting import new_tracker


def traced_steps(tmp_path) -> list[dict]:
    tracker = new_tracker("table", tmp_path, tokens_per_step=8, warmup=1, device="cpu", memory_every=10)
    for index in range(4):
        with tracker.step():
            for phase in ("data", "forward", "backward", "optimizer") + (("eval",) if index == 3 else ()):
                with tracker.phase(phase):
                    sum(range(2000))
    tracker.finish()
    return [json.loads(line) for line in (tracker.run_dir / "steps.jsonl").read_text().splitlines()]


def test_a_traced_loop_gets_a_column_per_phase_it_timed(tmp_path):
    steps = traced_steps(tmp_path)
    phases = step_phases(steps)
    assert phases == ("data", "forward", "backward", "optimizer", "eval")
    columns = step_columns(phases)
    assert [column.label for column in columns] == ["step", "wall", *phases]
    first, last = (step_cells(columns, "step", step) for step in (steps[1], steps[-1]))
    assert first[0] == "step 1" and first[-1] == "—" and all(cell.endswith("ms") for cell in first[1:-1])
    assert last[-1].endswith("ms")  # the evaluation of the last step


def test_a_run_of_the_tool_keeps_its_three_phases():
    assert step_phases([{"phases_ms": {"forward": 1.0}}]) == ("forward", "backward", "optimizer")
    columns = step_columns(step_phases([{"phases_ms": {"forward": 1.0}}]))
    assert step_cells(columns, "warm-up", {"index": 0, "wall_ms": 2.5, "phases_ms": {"forward": 1.0}})[3:] == (
        "—", "—")


def test_the_running_statistics_name_a_traced_loops_own_phases_first(tmp_path):
    from sysprof.profiler_core.analysis.metrics import phase_stats

    measured = [step for step in traced_steps(tmp_path) if step["kind"] == "measured"]
    stats = phase_stats(measured)
    assert list(stats)[:2] == ["data", "eval"] and list(stats)[-1] == "step"
    assert stats["data"]["n"] == 3 and stats["eval"]["n"] == 1  # eval ran in the last step only
