"""The session watches the node while the clean pass measures (real runner on CPU): its readings become the run's
stored warnings. The host's load average is injected here, since a test cannot make a machine busy on cue."""
import os

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.nvml import visible_gpu_index
from sysprof.profiler_core.session.passes import Session
from sysprof.profiler_core.session.watch import MeasuredWatch

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

TINY = RunConfig(model="tiny", ctx=16, batch=2, warmup=0, steps=3, device="cpu")


def test_a_loaded_host_is_a_stored_warning_with_its_numbers(tmp_path, monkeypatch):
    cores = os.cpu_count()
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 3.0, 0.0, 0.0))
    summary = Session(TINY, tmp_path, lambda event: None).run()
    codes = {w["code"]: w for w in summary["warnings"]}
    assert f"host CPU load {cores + 3.0:.1f} over {cores} cores" in codes["cpu_load"]["message"]
    assert rundir.read_summary(tmp_path)["warnings"] == summary["warnings"]
    assert not (tmp_path / rundir.TELEMETRY).exists()  # a CPU run takes no GPU samples


def test_a_quiet_host_adds_no_load_warning_and_the_gpu_index_follows_cuda_visible_devices(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    summary = Session(TINY, tmp_path, lambda event: None).run()
    assert "cpu_load" not in {w["code"] for w in summary["warnings"]}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert visible_gpu_index() == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5f2c")  # a UUID: NVML's first device is the best guess
    assert visible_gpu_index() == 0
    watch = MeasuredWatch("cpu")
    watch.start(None)
    watch.stop()
    assert watch.samples == [] and watch.max_load == 0.0
