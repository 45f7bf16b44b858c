"""--nproc on GPUs: NCCL ranks, one GPU each (skipped unless 2 GPUs are visible; run on the 2×H200 machine)."""
import json
import subprocess
import sys
import time

import pytest

from sysprof.profiler_core.base.nvml import visible_gpu_count

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(visible_gpu_count() < 2, reason="needs 2 visible GPUs (the 2×H200 machine)")]
SMALL_BF16 = ["--model", "small", "--dtype", "bf16", "--attention", "sdpa", "--warmup", "3", "--steps", "10",
              "--nproc", "2"]


def run(args, env):
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", *args, "--json"], env=env,
                            capture_output=True, text=True, timeout=600)
    return result.returncode, json.loads(result.stdout) if result.stdout else None, result.stderr


def compute_pids() -> set[int]:
    import pynvml

    pynvml.nvmlInit()
    try:
        return {p.pid for i in range(pynvml.nvmlDeviceGetCount())
                for p in pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(i))}
    finally:
        pynvml.nvmlShutdown()


def no_process_left(before: set[int]) -> bool:
    for _ in range(20):  # the ranks' CUDA contexts go a moment after their exit
        if not compute_pids() - before:
            return True
        time.sleep(0.5)
    return False


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_two_nccl_ranks_are_timed_and_tabled_with_their_gpus(cli_env, parallel):
    before = compute_pids()
    code, summary, stderr = run([*SMALL_BF16, "--parallel", parallel], cli_env)
    assert code == 0, stderr
    rows = summary["ranks"]["rows"]
    assert [row["device"] for row in rows] == ["cuda:0", "cuda:1"]
    assert all(row["peak_allocated_bytes"] > 0 and row["sm_clock_mhz"] for row in rows)
    assert not any(w["code"] == "gpu_shared" for w in summary["warnings"])  # the ranks are ours
    assert no_process_left(before)


def test_a_slowed_gpu_rank_is_named_and_its_peer_waits_in_all_reduce(cli_env):
    code, summary, stderr = run(SMALL_BF16, {**cli_env, "SYSPROF_TEST_SLOW_RANK": "1:30"})
    assert code == 0, stderr
    said = summary["ranks"]["findings"][0]
    assert said.startswith("rank 1 is the straggler: the test delay of 30 ms in its forward (SYSPROF_TEST_SLOW_RANK)")
    assert "rank 0 waits ~" in said and "of each step in backward" in said


def test_a_rank_that_fails_on_the_gpu_stops_the_other_and_leaves_no_process(cli_env):
    from pathlib import Path

    before = compute_pids()
    model = Path(__file__).resolve().parents[1] / "data" / "models" / "ranks" / "fails_on_rank_1.py"
    code, summary, _ = run([*SMALL_BF16, "--model-factory", f"{model}:FailsOnRankOne"], cli_env)
    assert code == 1 and summary["error"]["message"] == "rank 1: ValueError: rank one's batch is cursed"
    assert no_process_left(before)


def test_each_rank_has_its_own_kernel_tables_with_communication_and_its_own_memory_pass(cli_env):
    import csv
    from pathlib import Path

    code, summary, stderr = run([*SMALL_BF16, "--steps", "5", "--profiler", "nsys", "--memory"], cli_env)
    assert code == 0, stderr
    kernel_rows = summary["profile"]["ranks"]
    assert [row["rank"] for row in kernel_rows] == [0, 1] and not [row for row in kernel_rows if row.get("error")]
    assert all(row["comm_ms"] > 0 and 0 <= row["overlap_pct"] <= 100 for row in kernel_rows)
    assert all(row["comm_ms"] is not None for row in summary["ranks"]["rows"])
    run_dir = Path(summary["run_dir"])
    with (run_dir / "kernels" / "ranks" / "01" / "phase_kernels.csv").open() as table:
        classes = {(row["phase"], row["class"]) for row in csv.DictReader(table)}
    assert ("backward", "nccl") in classes  # DDP's all-reduce runs inside backward
    memory_rows = summary["memory"]["ranks"]
    assert [row["rank"] for row in memory_rows] == [0, 1]
    assert all(row["peak_allocated_bytes"] > 0 for row in memory_rows)


def test_a_sweep_spreads_its_cells_over_two_gpus_each_recording_its_own(cli_env):
    args = ["sweep", "--model", "tiny", "--seed", "1,2", "--steps", "5", "--device", "cuda", "--gpus", "0,1", "--json"]
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=cli_env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    from pathlib import Path

    from sysprof.profiler_core.studies.document import sweep_rows

    rows = sweep_rows(Path(json.loads(result.stdout)["sweep_dir"]))
    assert sorted(row["gpu"] for row in rows) == ["0", "1"] and {row["status"] for row in rows} == {"ok"}
