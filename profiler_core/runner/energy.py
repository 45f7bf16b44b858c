"""NVML's energy counter of the runner's GPU, read where a stretch of measured steps starts and ends.

The counter (nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded) is the whole GPU's: another
process on the same GPU is counted too, which the run says. On an H200 one read took 4.5 ms under load and the value
moved about every 100 ms (benchmarks/energy/counter.py), so it is read twice per stretch of steps (a run's measured
loop, a shared process's block), never per step: a step's own joules would be the counter's coarseness, and reads
between steps would slow the run. A stretch must last long enough for that coarseness to be small (energy.py).
"""
from __future__ import annotations

import time
from typing import Any

import torch

from sysprof.profiler_core.base.nvml import visible_gpu_index


def _read(call):
    try:
        return call()
    except Exception:  # pynvml's NVMLError family: not supported on this GPU, no permission, a lost GPU
        return None


class EnergyMeter:
    """The counter of one CUDA device, summed over stretches of steps; nothing off CUDA or where NVML lacks it."""

    def __init__(self, device: torch.device):
        self.nvml: Any = None  # the pynvml module once NVML is open
        self.handle: Any = None
        self.power_limit_w: float | None = None
        self.joules = 0.0
        self.steps = 0  # the steps of the stretches whose joules were read: what the joules are divided by
        self.spans_s: list[float] = []  # each stretch's wall seconds
        self.clocks_mhz: list[int] = []  # the SM clock at each stretch's end
        self._started: tuple[float, float] | None = None
        if device.type == "cuda":
            self._open(device)

    def _open(self, device: torch.device) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, _handle(pynvml, device)
        except Exception:  # no library, no driver: the run has no energy figures
            self.nvml = None
            return
        limit = _read(lambda: self.nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle))
        self.power_limit_w = None if limit is None else limit / 1000
        if self._joules_now() is None:
            self.nvml = None

    @property
    def available(self) -> bool:
        return self.nvml is not None

    def _joules_now(self) -> float | None:
        value = _read(lambda: self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
        return None if value is None else value / 1000

    def start(self) -> None:
        """A stretch of steps begins (after a synchronize: nothing of an earlier step still runs)."""
        joules = self._joules_now() if self.available else None
        self._started = None if joules is None else (time.perf_counter(), joules)

    def stop(self, steps: int) -> None:
        """The stretch of `steps` finished steps ends (after the last one's synchronize): its joules, seconds and
        steps are added (a stretch whose read failed adds none of them)."""
        if self._started is None:
            return
        joules = self._joules_now()
        started_at, started_j = self._started
        self._started = None
        if joules is None:
            return
        self.spans_s.append(time.perf_counter() - started_at)
        self.joules += joules - started_j
        self.steps += steps
        clock = _read(lambda: self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        if clock is not None:
            self.clocks_mhz.append(int(clock))


def _handle(pynvml, device: torch.device):
    """The NVML handle of torch's device: by PCI bus id where torch gives it (CUDA_VISIBLE_DEVICES may name GPUs by
    UUID or reorder them), else the position CUDA_VISIBLE_DEVICES gives it."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        pci = f"{getattr(props, 'pci_domain_id', 0):08x}:{bus:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
        handle = _read(lambda: pynvml.nvmlDeviceGetHandleByPciBusId_v2(pci))
        if handle is not None:
            return handle
    return pynvml.nvmlDeviceGetHandleByIndex(visible_gpu_index(index))
