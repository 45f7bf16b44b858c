"""`sysprof study scaling`: gloo ranks on the CPU stand in for GPUs (the real runner, torchrun and every table), and a
real 2-rank summary from the 2×H200 host (xl DDP under nsys) checks the per-process figures and communication."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies.kinds import scaling

ROOT = Path(__file__).resolve().parents[2]
XL_SUMMARY = ROOT / "tests" / "data" / "benchmarks" / "multi_gpu" / "results" / "2026-11-23_h200x2" \
    / "comm_xl_summary.json"
MAIN = "scaling: step, tokens/s and efficiency per GPU count"
COMMUNICATION = "communication per rank (the first process of each cell, under nsys)"


def sysprof(args, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_every_count_and_parallel_its_efficiency_and_the_counts_the_host_lacks(cli_env):
    result = sysprof(["study", "scaling", "--device", "cpu", "--models", "tiny", "--gpus", "1,2,4096",
                      "--parallels", "ddp,fsdp", "--repeats", "2", "--warmup", "1", "--steps", "4", "--ctx", "64",
                      "--json"], {**cli_env, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    tables = json.loads(result.stdout)
    rows = {(row["parallel"], row["GPUs"]): row for row in tables[MAIN]}
    assert set(rows) == {("single", 1), ("ddp", 2), ("fsdp", 2), ("ddp", 4096), ("fsdp", 4096)}
    reference = rows["single", 1]["tokens/s all GPUs"]
    for key in (("single", 1), ("ddp", 2), ("fsdp", 2)):
        row = rows[key]
        assert row["status"] == "ok" and row["processes ok"] == "2 of 2"  # each process read, the second from repeats/
        assert row["step ms min"] <= row["step ms"] <= row["step ms max"]
        assert row["scaling efficiency"] == pytest.approx(row["tokens/s per GPU"] / reference, abs=0.01)
    assert rows["single", 1]["scaling efficiency"] == 1.0
    assert rows["ddp", 4096]["status"] == "not run"
    assert rows["ddp", 4096]["note"].startswith("needs 4096 GPUs, this host has")
    assert [row["model"] for row in tables["cells"]] == ["tiny"] * 3  # the cells table follows, as for every kind


def test_no_count_that_fits_the_host_is_one_line_before_anything_runs(cli_env):
    result = sysprof(["study", "scaling", "--device", "cpu", "--models", "tiny", "--gpus", "4096"], cli_env)
    assert result.returncode == 2 and "no count of --gpus 4096 fits this host" in result.stderr
    result = sysprof(["study", "scaling", "--device", "cpu", "--models", "tiny", "--nproc", "2"], cli_env)
    assert result.returncode == 2 and "leave --nproc out" in result.stderr
    assert "Traceback" not in result.stderr and not Path(cli_env["SYSPROF_RUNS"]).exists()


def test_a_real_two_rank_summary_gives_the_slowest_ranks_step_all_ranks_tokens_and_communication(tmp_path):
    summary = json.loads(XL_SUMMARY.read_text())
    [figures] = scaling.process_figures(tmp_path, summary)
    assert figures["step_ms"] == max(rank["median_ms"]["step"] for rank in summary["ranks"]["rows"])
    assert figures["tokens_per_s"] == summary["ranks"]["tokens_per_s_all_ranks"]
    assert scaling.peak_bytes(summary) == 48907945472
    cfg = RunConfig(model="xl", nproc=2)
    [rank0, rank1] = scaling.communication_rows([(cfg, summary)])
    assert (rank0["rank"], rank0["NCCL ms per step"], rank0["exposed ms"], rank0["overlap %"]) == (0, 35.09, 21.43,
                                                                                                 38.94)
    assert rank1["rank"] == 1
    row = scaling.cell_row(cfg, summary, [figures], reference=figures["tokens_per_s"])
    assert row["scaling efficiency"] == 0.5 and row["peak GiB per GPU"] == round(48907945472 / 2**30, 2)


def test_a_rank_that_died_leaves_the_others_step_and_a_later_process_is_read_from_its_own_summary(tmp_path):
    summary = json.loads(XL_SUMMARY.read_text())
    second = json.loads(XL_SUMMARY.read_text())
    summary["ranks"]["rows"][1] |= {"status": "oom", "median_ms": {}, "peak_allocated_bytes": None}
    second["ranks"]["tokens_per_s_all_ranks"] = 1234.0
    (tmp_path / "repeats" / "02").mkdir(parents=True)
    (tmp_path / "repeats" / "02" / "summary.json").write_text(json.dumps(second))
    group = {**summary, "repeats": {"n": 3, "processes": [{"status": "ok", "phases": {}, "tokens_per_s": 1.0},
                                                          {"status": "ok", "phases": {}, "tokens_per_s": 2.0},
                                                          {"status": "failed", "phases": {}}]}}
    first, later = scaling.process_figures(tmp_path, group)
    assert first["step_ms"] == summary["ranks"]["rows"][0]["median_ms"]["step"]
    assert later["tokens_per_s"] == 1234.0  # its own per-rank sum, not the group's first process's
    row = scaling.cell_row(RunConfig(model="xl", nproc=2), group, [first, later], reference=None)
    assert row["processes ok"] == "2 of 3" and row["scaling efficiency"] is None


def test_the_plan_keeps_one_single_gpu_cell_and_lists_what_does_not_fit():
    cells, not_run = scaling.plan_cells(RunConfig(model="tiny"), ["tiny"], [1, 2, 2, 8], ["ddp", "fsdp"], have=2)
    assert [(c.nproc, c.parallel) for c in cells] == [(1, "ddp"), (2, "ddp"), (2, "fsdp")]
    assert [(n["parallel"], n["gpus"]) for n in not_run] == [("ddp", 8), ("fsdp", 8)]


@pytest.mark.slow
def test_a_saved_scaling_study_exports_its_tables(cli_env):
    """The study's directory opens and exports like any study's (resumable, exportable: a kind, not a script)."""
    result = sysprof(["study", "scaling", "--device", "cpu", "--models", "tiny", "--gpus", "1", "--warmup", "0",
                      "--steps", "2", "--ctx", "32"], cli_env)
    assert result.returncode == 0, result.stderr[-2000:]
    [study_dir] = Path(cli_env["SYSPROF_RUNS"]).iterdir()
    listed = sysprof(["export", str(study_dir), "--list"], cli_env)
    assert listed.returncode == 0 and "scaling: step, tokens/s and efficiency per GPU count" in listed.stdout
