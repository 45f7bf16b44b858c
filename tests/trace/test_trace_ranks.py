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
