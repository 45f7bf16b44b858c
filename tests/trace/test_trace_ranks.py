"""`sysprof trace --nproc 2 -- ddp_train.py`: a data-parallel job with no line of sysprof in it (gloo on the CPU)
becomes one run directory with each rank in its place, the per-rank table and the straggler findings of a
`sysprof run --nproc 2`; the rank whose own data loader is slow is named, with its loader as the cause."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DDP = ROOT / "tests" / "data" / "trace" / "ddp_train.py"


@pytest.mark.slow
def test_a_two_rank_job_gives_one_run_with_per_rank_rows_and_names_the_rank_its_loader_slows(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(tmp_path),
                           "--nproc", "2", "--warmup", "3", "--", sys.executable, str(DDP), "--steps", "25",
                           "--slow-loader-rank", "1", "--slow-ms", "5"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "rank 1 trained 25 steps" in done.stdout, done.stderr
    (run,) = tmp_path.glob("*-trace-*")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["rank"] == {"rank": 0, "local_rank": 0, "world": 2}
    assert json.loads((run / "ranks" / "01" / "summary.json").read_text())["rank"]["rank"] == 1
    rows = {row["rank"]: row for row in summary["ranks"]["rows"]}
    assert set(rows) == {0, 1} and rows[1]["median_ms"]["data"] > rows[0]["median_ms"]["data"] + 30  # 8 items × 5 ms
    (named,) = [f for f in summary["ranks"]["findings"] if f.startswith("rank 1 is the straggler")]
    assert "its next batch" in named and "data loader" in named
    assert [t["rank"] for t in summary["ranks"]["stragglers"] if t["straggler"]] == [1]


@pytest.mark.slow
def test_a_rank_that_raises_fails_the_run_with_its_own_reason_and_both_ranks_keep_their_steps(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(tmp_path),
                           "--nproc", "2", "--warmup", "3", "--", sys.executable, str(DDP), "--steps", "25",
                           "--raise-on-rank", "1", "--raise-at", "12"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr.split("sysprof.trace.launch FAILED")[-1]
    (run,) = tmp_path.glob("*-trace-*")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"]["message"].startswith("rank 1: RuntimeError: rank 1 lost its shard at step 12")
    assert [row["rank"] for row in summary["ranks"]["rows"]] == [0, 1]  # the steps both measured before it


def test_a_job_killed_before_its_tracker_finished_gets_its_summary_from_the_steps_it_wrote(tmp_path):
    from sysprof.profiler_core.session.watch import MeasuredWatch
    from sysprof.trace.settle import settle_job
    from sysprof.trace.starting import new_tracker

    tracker = new_tracker("killed", tmp_path, None, 1, "cpu", 10)
    for _ in range(4):
        with tracker.step(), tracker.phase("forward"):
            pass
    tracker.run.flush()  # what a job had written when SIGKILL came: no finish, no summary
    assert not (tracker.run_dir / "summary.json").exists()
    assert settle_job(tracker.run_dir, 1, None, MeasuredWatch("cpu")) == []
    summary = json.loads((tracker.run_dir / "summary.json").read_text())
    assert (summary["status"], summary["state"]) == ("failed", "killed") and summary["phases"]["step"]["n"] == 3
    assert summary["error"]["message"] == "the job was killed before its tracker could finish the run"
    tracker.run.heartbeat.stop()
