"""NVML's energy counter of the runner's GPU, read around each step: joules per step, and the SM clock it ran at.

The counter (nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded) is the whole GPU's: another
process on the same GPU is counted too, which the run says. It is read outside the timed part of a step (before
run_step starts its clock, after its synchronize), so reading it costs the step's wall time nothing. The counter
moves in steps of its own (NVML updates it every few milliseconds), so a single short step's joules are coarse;
summed over contiguous steps they telescope to the counter's difference, which is exact to one update.
"""
from __future__ import annotations

import torch

from sysprof.profiler_core.nvml import visible_gpu_index


def _read(call):
    try:
        return call()
    except Exception:  # pynvml's NVMLError family: not supported on this GPU, no permission, a lost GPU
        return None


class EnergyMeter:
    """The counter of one CUDA device; every reading None off CUDA or where NVML lacks it."""

    def __init__(self, device: torch.device):
        self.nvml, self.handle = None, None
        self.power_limit_w: float | None = None
        if device.type != "cuda":
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, _handle(pynvml, device)
        except Exception:  # no library, no driver: the run has no energy figures, and says so
            self.nvml = None
            return
        limit = _read(lambda: self.nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle))
        self.power_limit_w = None if limit is None else limit / 1000
        if self.read_j() is None:
            self.nvml = None

    def read_j(self) -> float | None:
        if self.nvml is None:
            return None
        value = _read(lambda: self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
        return None if value is None else value / 1000

    def sm_clock_mhz(self) -> int | None:
        if self.nvml is None:
            return None
        return _read(lambda: self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))


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


def step_energy(meter: EnergyMeter | None, before_j: float | None) -> dict:
    """The step's fields: its joules (the counter's difference across it) and the SM clock at its end."""
    if meter is None or before_j is None:
        return {}
    after = meter.read_j()
    return {"energy_j": None if after is None else after - before_j, "sm_clock_mhz": meter.sm_clock_mhz()}
