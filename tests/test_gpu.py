"""GPU paths, proven on the lent H200 (skipped without CUDA)."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu


def sysprof_json(args, env):
    result = subprocess.run([sys.executable, "-m", "profiler_core", "run", *args, "--json"], env=env,
                            capture_output=True, text=True, timeout=600)
    return result.returncode, json.loads(result.stdout) if result.stdout else None, result.stderr


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_small_train_on_cuda_reports_events_memory_and_mfu(cli_env, dtype):
    code, summary, stderr = sysprof_json(["--model", "small", "--dtype", dtype, "--warmup", "3", "--steps", "5"], cli_env)
    assert code == 0, stderr
    assert summary["env"]["device_type"] == "cuda" and summary["env"]["phase_timer"] == "cuda_events"
    phases = summary["phases"]
    assert phases["forward"]["median_ms"] + phases["backward"]["median_ms"] <= phases["step"]["median_ms"]
    assert summary["peak_memory_bytes"]["backward"] > summary["params"] * 4  # weights + saved activations
    if "H100" in summary["env"]["device_name"] or "H200" in summary["env"]["device_name"]:
        assert 0 < summary["mfu"] < 1
    assert summary["precision_used"] == ("fp32" if dtype == "fp32" else "bf16")


def test_compile_time_is_reported_apart_from_steps(cli_env):
    code, summary, stderr = sysprof_json(["--model", "tiny", "--compile", "--warmup", "1", "--steps", "3"], cli_env)
    assert code == 0, stderr
    assert summary["compile_s"] > 0.5
    assert summary["phases"]["step"]["max_ms"] < summary["compile_s"] * 1e3


def test_oom_is_a_result_not_a_crash(cli_env):
    code, summary, stderr = sysprof_json(["--model", "2.7B", "--ctx", "4096", "--max-ctx", "4096", "--batch", "64",
                                          "--warmup", "0", "--steps", "1"], cli_env)
    assert code == 1, stderr
    assert summary["status"] == "oom" and summary["error"]["kind"] == "oom"
    assert summary["error"]["phase"] in ("build", "forward", "backward", "optimizer")
    assert summary["error"]["peak_allocated_bytes"] > 0


def test_fp16_uses_grad_scaler_and_runs(cli_env):
    code, summary, stderr = sysprof_json(["--model", "tiny", "--dtype", "fp16", "--warmup", "1", "--steps", "2"], cli_env)
    assert code == 0, stderr
    assert summary["status"] == "ok" and summary["config"]["dtype"] == "fp16"
