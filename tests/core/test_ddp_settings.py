"""DDP's own settings (--ddp-bucket-mb, --ddp-static-graph, --ddp-bucket-view, --ddp-comm-hook): refused in one
line where DDP does not run, passed to DistributedDataParallel where it does (two gloo ranks on the CPU), and the
advisor's candidates on several ranks."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.runner.distributed import ddp_settings
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates

ROOT = Path(__file__).resolve().parents[2]
TWO_RANKS = RunConfig(model="tiny", ctx=32, batch=2, warmup=1, steps=3, device="cpu", nproc=2)


@pytest.mark.parametrize(("changes", "field", "text"), [
    ({"nproc": 1, "ddp_static_graph": True}, "ddp_static_graph",
     "--ddp-static-graph is a DDP setting: give --nproc 2 or more with --parallel ddp"),
    ({"parallel": "fsdp", "ddp_bucket_mb": 50}, "ddp_bucket_mb", "--ddp-bucket-mb is a DDP setting"),
    ({"ddp_bucket_mb": 0}, "ddp_bucket_mb", "ddp_bucket_mb must be 1 to 10000 MB; got 0"),
    ({"ddp_comm_hook": "int8"}, "ddp_comm_hook", "ddp_comm_hook must be one of none, fp16, bf16; got 'int8'"),
    ({"ddp_comm_hook": "bf16"}, "ddp_comm_hook", "bf16 gradient compression needs NCCL (CUDA GPUs)"),
])
def test_bad_ddp_settings_are_one_line(changes, field, text):
    problems = config_problems(dataclasses.replace(TWO_RANKS, **changes))
    assert text in problems[field] and "\n" not in problems[field]


def test_the_settings_become_distributed_data_parallels_arguments():
    assert ddp_settings(TWO_RANKS) == {"static_graph": False, "gradient_as_bucket_view": False}
    tuned = dataclasses.replace(TWO_RANKS, ddp_bucket_mb=100, ddp_static_graph=True, ddp_bucket_view=True)
    assert ddp_settings(tuned) == {"static_graph": True, "gradient_as_bucket_view": True, "bucket_cap_mb": 100}


def test_the_advisor_tries_ddps_settings_on_several_ranks_only():
    on_gpus = {c.name: c for c in candidates(dataclasses.replace(TWO_RANKS, device="cuda"), True, None)}
    assert on_gpus["DDP bf16 gradient compression"].config.ddp_comm_hook == "bf16"
    assert on_gpus["DDP buckets of 100 MB"].config.ddp_bucket_mb == 100
    assert on_gpus["DDP gradients as bucket views"].reason is None and on_gpus["DDP static graph"].reason is None
    on_cpu = {c.name: c for c in candidates(TWO_RANKS, False, None)}
    assert on_cpu["DDP fp16 gradient compression"].reason is None and "DDP bf16 gradient compression" not in on_cpu
    viewed = {c.name: c for c in candidates(dataclasses.replace(TWO_RANKS, ddp_bucket_view=True), False, None)}
    assert viewed["DDP gradients as bucket views"].reason == "already set"
    assert not [c for c in candidates(dataclasses.replace(TWO_RANKS, nproc=1), False, None) if "DDP" in c.name]


@pytest.mark.slow
def test_two_gloo_ranks_run_with_every_setting_and_a_loss_close_to_plain_ddps(cli_env, tmp_path):
    """fp16 compression rounds each gradient for the all-reduce: the loss after three updates moves by far less than
    the advisor's 5% numerics tolerance."""
    def run(*extra):
        args = ["run", "--model", "tiny", "--device", "cpu", "--ctx", "32", "--batch", "2", "--warmup", "1",
                "--steps", "3", "--nproc", "2", "--runs-dir", str(tmp_path), "--json", *extra]
        result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *args], env=cli_env,
                                capture_output=True, text=True, timeout=240, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    plain = run()
    tuned = run("--ddp-bucket-mb", "1", "--ddp-static-graph", "--ddp-bucket-view", "--ddp-comm-hook", "fp16")
    assert tuned["config"]["ddp_comm_hook"] == "fp16" and tuned["config"]["ddp_bucket_mb"] == 1
    losses = [[json.loads(line) for line in (Path(s["run_dir"]) / "steps.jsonl").read_text().splitlines()][-1]["loss"]
              for s in (plain, tuned)]
    assert losses[1] == pytest.approx(losses[0], rel=0.01)
