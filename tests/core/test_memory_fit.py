"""A config whose predicted memory cannot fit the device is refused before it runs (unless --force)."""
import subprocess
import sys

import pytest

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.memory.fit import device_memory, fit_problem, predicted_lower_bound

GIB = 2**30


def test_a_config_beyond_the_limit_is_refused_with_the_prediction_and_the_limit():
    small = RunConfig(model="tiny", ctx=32, batch=2, device="cpu")
    huge = RunConfig(model="small", ctx=99_999_999, batch=4, device="cpu")
    assert fit_problem(small, (GIB, "the host's RAM")) is None
    problem = fit_problem(huge, (24 * GIB, "the host's RAM"))
    assert problem.startswith("predicted peak memory ≥ ") and "PiB is more than the host's RAM (24.00 GiB)" in problem
    assert predicted_lower_bound(huge) > 2**50
    assert fit_problem(huge, None) is None  # a device whose memory cannot be told: not refused
    assert fit_problem(RunConfig(model="small", ctx=99_999_999, model_factory="m:f"), (GIB, "x")) is None
    assert fit_problem(RunConfig(model="small", ctx=99_999_999, nproc=2, parallel="fsdp"), (GIB, "x")) is None


def test_the_cpu_limit_is_the_hosts_ram():
    limit = device_memory("cpu")
    assert limit is not None and limit[1] == "the host's RAM" and limit[0] > 2**28


def test_sysprof_run_refuses_in_one_line_before_anything_runs(cli_env, tmp_path):
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--device", "cpu",
                             "--ctx", "99999999", "--steps", "1"], env=cli_env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "is more than the host's RAM" in result.stderr and "--force" in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.gpu
def test_the_cuda_limit_is_gpu_0s_memory_by_nvml():
    import torch

    limit = device_memory("cuda")
    assert limit is not None and limit[1] == "GPU 0's memory"
    cuda = torch.cuda.get_device_properties(0).total_memory
    assert abs(limit[0] - cuda) <= 0.02 * cuda  # NVML's total and CUDA's can differ by what the driver keeps
