"""What else happened on the node while the clean pass measured its steps: the session samples NVML (SM clock,
throttle reasons, the processes on the GPU) and the host's load average from its own process, never from the
runner's, so the readings cost the measured steps nothing but a thread in another process.

Readings start at the runner's "measured" stage and stop at its last event. They become the run's stored
warnings (stability.warnings_for_summary) and `telemetry.jsonl` in the run directory. With --nproc the session
samples every rank's GPU (each sample names its `gpu`, the rank's local index): the warnings read the first
rank's, whose numbers the summary shows, and each rank's row gets its median SM clock and power.
"""
from __future__ import annotations

import os
import statistics
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sysprof.profiler_core.analysis.stability import warnings_for_summary
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.nvml import NvmlSampler, visible_gpu_index
from sysprof.profiler_core.base.processes import stand_in_of

PERIOD_S = 0.25  # NVML's clock and reason readings are instantaneous: a few per second catch a dip of a step


def descends_from(pid: int, ancestors: set[int], depth: int = 8) -> bool:
    """Whether pid is one of ancestors or their child's child… (/proc): torchrun's ranks are the runner's children.
    A process a warm-start server forked counts as the child of its stand-in, the process its launcher started."""
    for _ in range(depth):
        if pid in ancestors:
            return True
        parent = stand_in_of(pid) or _parent_of(pid)
        if parent is None or parent <= 1:
            return False
        pid = parent
    return False


def _parent_of(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone, another pid namespace, not Linux: not provably ours
        return None
    return int(next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "0"))


def _other_processes(sampler: NvmlSampler, ours: set[int]) -> list[dict]:
    nvml, handle = sampler.pynvml, sampler.handle
    if nvml is None:
        return []
    try:
        running = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:  # NVML's error family: no permission in a container, not supported: nothing to report
        return []
    return [{"pid": p.pid, "name": process_name(p.pid), "used_bytes": getattr(p, "usedGpuMemory", None)}
            for p in running if not descends_from(p.pid, ours)]


def process_name(pid: int) -> str | None:
    """The command name of a pid (/proc), None where it cannot be read (another pid namespace, gone, not Linux)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class MeasuredWatch:
    """Samples in a thread between start() and stop(); warnings() and save() afterwards."""

    def __init__(self, device_type: str | None = "cuda", gpus: int = 1):
        self.use_gpu, self.gpus = device_type != "cpu", gpus
        self.samples: list[dict[str, Any]] = []
        self.processes: dict[tuple[int, int], dict] = {}  # (local GPU, pid) → the other process
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
        samplers = [NvmlSampler(visible_gpu_index(local)) for local in range(self.gpus)]
        opened = [sampler for sampler in samplers if self.use_gpu and sampler.open()]
        try:
            while True:
                self._read_host()
                for local, sampler in enumerate(opened):
                    self._read_gpu(sampler, local)
                if self._stop.wait(PERIOD_S):
                    return
        finally:
            for sampler in samplers:
                sampler.close()

    def _read_host(self) -> None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not every platform has a load average
            return
        self.max_load = load if self.max_load is None else max(self.max_load, load)

    def _read_gpu(self, sampler: NvmlSampler, local: int) -> None:
        sample = sampler.sample()
        self.samples.append({"sm_clock_mhz": sample.sm_clock_mhz, "throttle_reasons": sample.throttle_reasons,
                             "utilization_pct": sample.utilization_pct, "power_w": sample.power_w}
                            | ({"gpu": local} if self.gpus > 1 else {}))
        for process in _other_processes(sampler, self._ours):  # which GPU it shares: the rank's, with --nproc
            self.processes.setdefault((local, process["pid"]), process | {"gpu": visible_gpu_index(local),
                                                                          "local": local})

    def gpu_samples(self, local: int) -> list[dict[str, Any]]:
        return [s for s in self.samples if s.get("gpu", 0) == local]

    def warnings(self, summary, steps) -> list[dict]:
        first = (summary.get("rank") or {}).get("rank", 0) if self.gpus > 1 else None
        processes = [p | ({"rank": first + p["local"]} if first is not None else {}) for p in self.processes.values()]
        return warnings_for_summary(summary, steps, loadavg=self.max_load, cpu_count=os.cpu_count(),
                                    gpu_processes=processes or None, telemetry=self.gpu_samples(0) or None)

    def per_gpu_medians(self) -> dict[int, dict[str, Any]]:
        """Each local GPU's median SM clock and power over the measured steps (None where NVML had no reading), the
        other processes seen on it and its throttle reasons (how many samples had each)."""
        medians: dict[int, dict[str, Any]] = {}
        for local in range(self.gpus):
            samples = self.gpu_samples(local)
            medians[local] = {key: _median([s[key] for s in samples if s.get(key) is not None])
                              for key in ("sm_clock_mhz", "power_w")}
            medians[local]["other_processes"] = [{k: v for k, v in p.items() if k != "local"}
                                                 for (gpu, _), p in self.processes.items() if gpu == local]
            reasons = Counter(r for s in samples for r in set(s.get("throttle_reasons") or ()))
            medians[local]["throttle_reasons"] = dict(reasons)
        return medians

    def save(self, run_dir: Path) -> None:
        for sample in self.samples:
            rundir.append_jsonl(run_dir / rundir.TELEMETRY, sample)
