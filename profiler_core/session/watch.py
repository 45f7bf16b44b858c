"""What else happened on the node while the clean pass measured its steps: the session samples NVML (SM clock,
throttle reasons, the processes on the GPU) and the host's load average from its own process, never from the
runner's, so the readings cost the measured steps nothing but a thread in another process.

Readings start at the runner's "measured" stage and stop at its last event. They become the run's stored
warnings (stability.warnings_for_summary) and `telemetry.jsonl` in the run directory.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from profiler_core import rundir
from profiler_core.nvml import NvmlSampler
from profiler_core.stability import warnings_for_summary

PERIOD_S = 0.25  # NVML's clock and reason readings are instantaneous: a few per second catch a dip of a step


def visible_gpu_index() -> int:
    """NVML counts every GPU; the runner's cuda:0 is the first one CUDA_VISIBLE_DEVICES names (when a number)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def _other_processes(sampler: NvmlSampler, ours: set[int]) -> list[dict]:
    nvml, handle = sampler.pynvml, sampler.handle
    if nvml is None:
        return []
    try:
        running = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:  # NVML's error family: no permission in a container, not supported: nothing to report
        return []
    return [{"pid": p.pid, "used_bytes": getattr(p, "usedGpuMemory", None)} for p in running if p.pid not in ours]


class MeasuredWatch:
    """Samples in a thread between start() and stop(); warnings() and save() afterwards."""

    def __init__(self, device_type: str | None = "cuda"):
        self.use_gpu = device_type != "cpu"
        self.samples: list[dict[str, Any]] = []
        self.processes: dict[int, dict] = {}
        self.max_load: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ours: set[int] = {os.getpid()}

    def start(self, runner_pid: int | None) -> None:
        if self._thread is not None:
            return
        if runner_pid is not None:
            self._ours.add(runner_pid)
        self._thread = threading.Thread(target=self._loop, name="measured-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        sampler = NvmlSampler(visible_gpu_index())
        opened = self.use_gpu and sampler.open()
        try:
            while True:
                self._read_host()
                if opened:
                    self._read_gpu(sampler)
                if self._stop.wait(PERIOD_S):
                    return
        finally:
            sampler.close()

    def _read_host(self) -> None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not every platform has a load average
            return
        self.max_load = load if self.max_load is None else max(self.max_load, load)

    def _read_gpu(self, sampler: NvmlSampler) -> None:
        sample = sampler.sample()
        self.samples.append({"sm_clock_mhz": sample.sm_clock_mhz, "throttle_reasons": sample.throttle_reasons,
                             "utilization_pct": sample.utilization_pct, "power_w": sample.power_w})
        for process in _other_processes(sampler, self._ours):
            self.processes.setdefault(process["pid"], process)

    def warnings(self, summary, steps) -> list[dict]:
        return warnings_for_summary(summary, steps, loadavg=self.max_load, cpu_count=os.cpu_count(),
                                    gpu_processes=list(self.processes.values()) or None,
                                    telemetry=self.samples or None)

    def save(self, run_dir: Path) -> None:
        for sample in self.samples:
            rundir.append_jsonl(run_dir / rundir.TELEMETRY, sample)
