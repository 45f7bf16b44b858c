"""`sysprof trace --profile-steps` under a real nsys, `--memory-steps` with the real allocator history, and
`sysprof trace --nproc 2` over NCCL: the chosen steps' kernels are tabled per phase in the run directory as a
`sysprof run`'s are, the recorded steps' memory analysed per phase; two ranks of an unchanged DDP loop, one of them
sharing its GPU with another job, give one run with per-rank rows, per-rank kernel tables and that rank named."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow, pytest.mark.usefixtures("needs_cuda")]

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ROOT / "tests" / "data" / "trace" / "plain_train.py"
DDP = ROOT / "tests" / "data" / "trace" / "ddp_train.py"
NEIGHBOUR = ROOT / "benchmarks" / "trace" / "neighbour.py"


def trace(runs: Path, options: list[str], script: list[str]) -> tuple[subprocess.CompletedProcess, Path]:
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "trace", "--runs-dir", str(runs), *options,
                           "--", sys.executable, *script], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    [run_dir] = runs.glob("*-trace-*")
    return done, run_dir


def test_the_chosen_steps_are_captured_and_tabled_per_phase(tmp_path):
    _, run_dir = trace(tmp_path, ["--warmup", "3", "--profile-steps", "8-11"],
                       [str(PLAIN), "2", "0", "--device", "cuda", "--width", "2048", "--repeat", "16", "--steps", "20"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["profiled_steps"] == [8, 11] and not summary["profile"].get("error"), summary["profile"]
    analysis = json.loads((run_dir / summary["profile"]["kernels"]).read_text())
    assert len(analysis["steps"]) == 4
    for phase in ("forward", "backward", "optimizer"):
        assert analysis["phases"][phase]["gpu_ns"] > 0 and analysis["phases"][phase]["kernels_per_step"] > 0, phase
    assert (run_dir / "kernels" / "phase_kernels.csv").is_file()
    assert summary["profile"]["inflation"] is not None


def test_memory_steps_are_analysed_per_phase_beside_profiled_steps_and_left_out_of_the_statistics(tmp_path):
    _, run_dir = trace(tmp_path, ["--warmup", "3", "--profile-steps", "8-9", "--memory-steps", "12-13"],
                       [str(PLAIN), "2", "0", "--device", "cuda", "--width", "2048", "--repeat", "16", "--steps", "20"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["memory_steps"] == [12, 13] and not summary["memory"].get("error"), summary["memory"]
    assert summary["profiled_steps"] == [8, 9] and not summary["profile"].get("error"), summary["profile"]
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert [s["index"] for s in steps if s.get("pass") == "memory"] == [12, 13]
    assert summary["phases"]["step"]["n"] == 20 - 3 - 2  # the recorded steps are slowed: not in the statistics
    analysis = json.loads((run_dir / summary["memory"]["analysis"]).read_text())
    assert analysis["peak_allocated_bytes"] == summary["memory"]["peak_allocated_bytes"] > 0
    marked = {mark["phase"] for mark in analysis["timeline"]["phase_marks"]}
    assert {"forward", "backward", "optimizer"} <= marked, marked
    assert summary["memory"]["inflation"] is not None and (run_dir / "memory" / "timeline.png").is_file()


def test_two_ranks_sharing_one_gpu_give_per_rank_rows_kernel_tables_and_memory_and_name_the_slow_loader(tmp_path):
    """Both ranks on GPU 0 over gloo (NCCL takes one GPU per rank): each rank's CUDA clock, its own nsys report and
    its own allocator history, in one run; rank 1's loader waits 3 ms an item."""
    _, run_dir = trace(tmp_path, ["--nproc", "2", "--warmup", "5", "--profile-steps", "10-12", "--memory-steps",
                                  "15-16"],
                       [str(DDP), "--device", "cuda", "--one-gpu", "--width", "2048", "--repeat", "16", "--steps", "30",
                        "--slow-loader-rank", "1", "--slow-ms", "3"])
    summary = json.loads((run_dir / "summary.json").read_text())
    ranks = summary["ranks"]
    assert [row["rank"] for row in ranks["rows"]] == [0, 1] and summary["env"]["device_type"] == "cuda"
    assert [row["rank"] for row in summary["profile"]["ranks"] if not row.get("error")] == [0, 1], summary["profile"]
    assert (run_dir / "kernels" / "ranks" / "01" / "analysis.json").is_file()
    assert [row["rank"] for row in summary["memory"]["ranks"] if not row.get("error")] == [0, 1], summary["memory"]
    assert (run_dir / "ranks" / "01" / "memory" / "analysis.json").is_file()
    assert any(f.startswith("rank 1 ") and "data loader" in f for f in ranks["findings"]), ranks["findings"]


def test_two_nccl_ranks_give_one_run_per_rank_kernels_and_name_the_rank_whose_gpu_another_job_shares(tmp_path):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    neighbour = subprocess.Popen([sys.executable, str(NEIGHBOUR), "300"], env={**os.environ,
                                                                              "CUDA_VISIBLE_DEVICES": "1"})
    try:
        time.sleep(5)  # the neighbour's context up and its kernels queued before the job starts
        _, run_dir = trace(tmp_path, ["--nproc", "2", "--warmup", "5", "--profile-steps", "20-23"],
                           [str(DDP), "--device", "cuda", "--width", "4096", "--repeat", "128", "--steps", "60"])
    finally:
        neighbour.kill()
        neighbour.wait()
    summary = json.loads((run_dir / "summary.json").read_text())
    ranks = summary["ranks"]
    assert [row["rank"] for row in ranks["rows"]] == [0, 1]
    assert [row["rank"] for row in summary["profile"]["ranks"] if not row.get("error")] == [0, 1]
    assert (run_dir / "kernels" / "ranks" / "01" / "analysis.json").is_file()
    assert any(f.startswith("rank 1 ") and "another process" in f for f in ranks["findings"]), ranks["findings"]
