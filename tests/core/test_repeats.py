"""--repeats: one config in N fresh runner processes (real runners on CPU), the group summary built from them,
the group ended by a process that fails, and sweeps that interleave the processes round-robin over their cells."""
import json
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.cli.main import main as sysprof_main
from sysprof.profiler_core.render.run_report import print_run
from sysprof.profiler_core.session import passes as session_module
from sysprof.profiler_core.session.repeats import RepeatedRun, process_dir
from sysprof.profiler_core.studies import sweep

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = RunConfig(model="tiny", ctx=16, batch=2, warmup=0, steps=3, device="cpu")


@pytest.fixture
def second_process_ooms(monkeypatch):
    """The second process replays the events of a real OOM on the H200 (2.7B, batch 64, ctx 4096)."""
    real_argv = session_module.runner_argv

    def argv(cfg, run_dir, capture="none", launcher=()):
        if Path(run_dir).name != "02":
            return real_argv(cfg, run_dir, capture)
        return [sys.executable, str(DATA / "fake_runner.py"), str(DATA / "events" / "oom_h200.jsonl"),
                "--run-dir", str(run_dir)]
    monkeypatch.setattr(session_module, "runner_argv", argv)


@pytest.mark.slow
def test_three_processes_make_one_group_whose_statistics_are_over_the_processes(tmp_path):
    cfg = RunConfig(**{**TINY.to_dict(), "repeats": 3})
    run_dir = rundir.new_run_dir(tmp_path, cfg)
    notices = []
    group = RepeatedRun(cfg, run_dir, lambda event: notices.append(event.get("message"))).run()
    assert run_dir.name.endswith("-x3") and group["status"] == "ok"
    assert group["repeats"]["n"] == 3 and group["repeats"]["ok"] == 3
    assert group["repeats"]["dirs"] == [".", "repeats/02", "repeats/03"]
    later = [rundir.read_summary(process_dir(run_dir, i)) for i in (1, 2)]
    medians = [p["phases"]["step"] for p in group["repeats"]["processes"]]
    assert medians[1:] == [s["phases"]["step"]["median_ms"] for s in later]  # each process's own run directory
    assert group["phases"]["step"]["median_ms"] == statistics.median(medians)
    assert group["between"]["step"]["n"] == 3 and group["between"]["step"]["cv_pct"] is not None
    assert group["phases"]["step"]["n"] == 9  # every measured step of every process
    assert rundir.read_summary(run_dir) == group  # summary.json is the group's
    assert len(rundir.read_steps(run_dir)) == 3  # the first process's steps stay where viewers read them
    assert "repeat 3/3: a fresh process" in notices
    console = Console(record=True, width=80)
    print_run(console, group)
    shown = console.export_text()
    assert "3 of 3 processes" in shown and "std in run" in shown and "range" in shown


@pytest.mark.slow
def test_a_process_that_fails_ends_the_group_and_gives_it_its_status(tmp_path, second_process_ooms):
    cfg = RunConfig(**{**TINY.to_dict(), "repeats": 4})
    group = RepeatedRun(cfg, rundir.new_run_dir(tmp_path, cfg), lambda event: None).run()
    assert group["status"] == "oom" and group["error"]["kind"] == "oom"
    assert group["repeats"]["n"] == 4 and group["repeats"]["ok"] == 1 and group["repeats"]["failed"] == 1
    assert len(group["repeats"]["processes"]) == 2  # no third process after the OOM
    assert group["between"]["step"]["n"] == 1 and group["between"]["step"]["cv_pct"] is None  # spread unknown


@pytest.mark.slow
def test_a_sweep_interleaves_the_processes_and_resumes_an_incomplete_group(tmp_path):
    configs = sweep.expand({**{k: [v] for k, v in TINY.to_dict().items()}, "ctx": [16, 24], "repeats": [2]})
    sweep_dir = sweep.create(tmp_path, "t", configs, ["ctx"])
    events = []
    summaries = sweep.run(sweep_dir, events.append)
    assert events[0] == {"event": "study", "cells": 2, "pending": 4}
    assert [(e["index"], e["repeat"]) for e in events if e["event"] == "cell"] == [(0, 1), (1, 1), (1, 2), (0, 2)]
    assert [s["repeats"]["ok"] for s in summaries] == [2, 2]
    assert {row["interleaved"] for row in compare_summaries(*summaries)} == {True}  # A B B A: each inside the other
    # a sweep stopped during the second round: cell 1 has its first process (its own summary, no group's yet)
    # and a torn second one; --resume keeps the first and runs the second again
    cell = sweep.cell_dir(sweep_dir, 1, configs[1])
    first_process = {k: v for k, v in rundir.read_summary(cell).items() if k not in ("repeats", "between")}
    rundir.write_json(cell / rundir.SUMMARY, first_process)
    (process_dir(cell, 1) / rundir.SUMMARY).unlink()
    events.clear()
    resumed = sweep.run(sweep_dir, events.append)
    assert events[0] == {"event": "study", "cells": 2, "pending": 1}
    assert [(e["index"], e["repeat"]) for e in events if e["event"] == "cell"] == [(1, 2)]
    assert resumed[1]["repeats"]["ok"] == 2 and resumed[1]["repeats"]["processes"][0]["phases"] == \
        {phase: stats["median_ms"] for phase, stats in first_process["phases"].items()}


@pytest.mark.parametrize("value", ["0", "-2", "101"])
def test_absurd_repeats_are_a_one_line_usage_error(tmp_path, capsys, value):
    code = sysprof_main(["run", "--model", "tiny", "--device", "cpu", "--repeats", value,
                         "--runs-dir", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"sysprof: error: repeats must be 1 to 100 fresh processes; got {value}"
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written


@pytest.mark.slow
def test_a_group_stopped_in_its_second_process_resumes_from_its_first(tmp_path):
    """The group's summary replaces the first process's file; resumed, the first must still count as done (a 2.7B
    advise cut in a cell's second process ran the first again). The second's summary is a real runner's, stopped by
    SIGINT on the CPU."""
    cfg = RunConfig(**{**TINY.to_dict(), "repeats": 3})
    run_dir = rundir.new_run_dir(tmp_path, cfg)
    group = RepeatedRun(cfg, run_dir, lambda event: None)
    first = group.run_process(0)
    group.summaries.append(json.loads((DATA / "events" / "sigint_cpu_summary.json").read_text()))
    assert group.write_summary()["status"] == "failed" and "repeats" in rundir.read_summary(run_dir)
    resumed = RepeatedRun(cfg, run_dir, lambda event: None).resume()
    assert [s["ran"] for s in resumed.summaries] == [first["ran"]] and not resumed.complete


def _groups(done: list[int]) -> dict:
    return {index: SimpleNamespace(summaries=[{}] * n) for index, n in enumerate(done) if n is not None}


def test_a_resumed_sweep_runs_what_is_left_in_the_order_of_a_whole_one():
    configs = [RunConfig(model="tiny", repeats=2)] * 6
    assert sweep.schedule(configs, _groups([0, 0, 0])) == [0, 1, 2, 2, 1, 0]  # A B C, C B A
    # the H200 advise, cut in the first process of its last cell: that cell's two run first, then the second
    # round backwards, so each cell's processes lie inside its neighbours' and the baseline's (it ran them last,
    # back to back: "not interleaved")
    assert sweep.schedule(configs, _groups([1, 1, 1, 1, 1, 0])) == [5, 5, 4, 3, 2, 1, 0]
    # cut in the second round (cell 5 done, cell 4 cancelled in its second process): the baseline runs last
    groups = _groups([1, 1, 1, 1, 1, None])
    assert sweep.schedule(configs, groups) == [4, 3, 2, 1, 0]
    assert sweep.schedule([RunConfig(model="tiny", repeats=3)] * 2, _groups([2, 0])) == [1, 1, 0, 1]


@pytest.mark.slow
def test_a_group_an_oom_ends_leaves_the_count_and_the_apps_progress_ends(tmp_path, second_process_ooms, capsys):
    """Two cells of 3 processes whose second process OOMs (a real H200 OOM's events): 4 processes run, not 6, and
    the count the CLI and the app show ends at 4 of 4 (it stayed at 4 of 6, "now:" never cleared)."""
    from sysprof.profiler_core.studies.progress import Progress
    from sysprof.tui.model.study_state import StudyState

    configs = sweep.expand({**{k: [v] for k, v in TINY.to_dict().items()}, "ctx": [16, 24], "repeats": [3]})
    sweep_dir = sweep.create(tmp_path, "t", configs, ["ctx"])
    with Progress(True).recorded(sweep_dir) as progress:
        sweep.run(sweep_dir, progress.sweep_listener("sweep", sweep_dir))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    done = [e for e in lines if e.get("event") == "cell_done"]
    assert len(done) == 4 and (done[-1]["done"], done[-1]["pending"]) == (4, 4)
    state = StudyState(stage="running")
    for event in lines:
        state = state.apply(event)
    assert (state.done, state.pending, state.current) == (4, 4, "")
    assert "4/4 runs done · 2 cells" in state.progress_line()  # it said "cells run", counting processes


def test_a_cancel_ends_the_sweep_without_shrinking_what_is_left_to_run(tmp_path):
    """A cancelled process stops the sweep; the processes it did not run are still to run (a resume runs them), so
    the count does not shrink to what ran, as it does for a group an OOM ended."""
    configs = sweep.expand({**{k: [v] for k, v in TINY.to_dict().items()}, "ctx": [16, 24], "repeats": [2]})
    sweep_dir = sweep.create(tmp_path, "t", configs, ["ctx"])
    cancelled = json.loads((DATA / "events" / "sigint_cpu_summary.json").read_text())

    def run_process(self, index):
        self.summaries.append(cancelled)  # the real runner's summary when SIGINT stopped it
        return cancelled
    seen = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RepeatedRun, "run_process", run_process)
        sweep.run(sweep_dir, seen.append)
    done = [e for e in seen if e["event"] == "cell_done"]
    assert len(done) == 1 and done[0]["pending"] == 4
