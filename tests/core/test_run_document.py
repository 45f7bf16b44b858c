"""The run document (run_document.Run): a run directory read once, asked typed questions."""
from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import RunDirError
from sysprof.profiler_core.cli.export import run_tables
from sysprof.profiler_core.documents.run_document import KERNELS, MEMORY, Run

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"


@pytest.fixture
def reads(monkeypatch) -> collections.Counter:
    counter: collections.Counter = collections.Counter()
    for name in ("read_json", "jsonl_records"):
        real = getattr(rundir, name)
        monkeypatch.setattr(rundir, name, lambda path, real=real: counter.update([Path(path).name]) or real(path))
    return counter


def test_a_run_answers_from_its_files():
    run = Run.load(RUN)
    summary = json.loads((RUN / rundir.SUMMARY).read_text())
    assert run.status == summary["status"] == "ok"
    assert run.config == json.loads((RUN / rundir.MANIFEST).read_text())["config"]
    assert run.median_ms("forward") == summary["phases"]["forward"]["median_ms"] > 0
    assert run.median_ms("no such phase") is None
    assert run.measured_count == summary["phases"]["step"]["n"]
    assert run.analysis(KERNELS)["phases"]["forward"]["gpu_ns"] > 0
    assert run.analysis(MEMORY)["top_allocations"]


def test_every_table_of_a_run_reads_each_file_once(reads):
    run = Run.load(RUN)
    first, again = run_tables(run), run_tables(run)
    assert first == again and {"phases", "steps", "kernels", "top allocations"} <= set(first)
    assert reads == {"manifest.json": 1, "summary.json": 1, "steps.jsonl": 1, "analysis.json": 2}  # kernels, memory


def test_a_directory_without_a_manifest_is_no_run_but_can_be_a_cell_not_yet_run(tmp_path):
    with pytest.raises(RunDirError, match="not a run directory"):
        Run.load(tmp_path)
    empty = Run.load(tmp_path / "cell-not-started", need_manifest=False)
    assert (empty.status, empty.phases, empty.measured_count, empty.analysis(KERNELS)) == ("incomplete", {}, 0, None)


def test_a_torn_summary_is_a_problem_named_not_a_crash(tmp_path):
    shutil.copytree(RUN, tmp_path / "run")
    (tmp_path / "run" / rundir.SUMMARY).write_text('{"status": "ok", "pha')
    with pytest.raises(RunDirError):
        Run.load(tmp_path / "run")
    run = Run.load(tmp_path / "run", tolerant=True)
    assert run.summary is None and rundir.SUMMARY in run.problems
    assert run.measured_count == len(run.measured_steps) > 0  # counted from steps.jsonl instead
