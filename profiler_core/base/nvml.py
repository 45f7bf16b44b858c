"""NVML, the cheap way to ask about GPUs without torch or a CUDA context (nvidia-ml-py): how many there are,
the driver version, and telemetry one sample per call.

Every field a GPU or driver does not support is None, shown as "N/A" (nvitop's rule): a missing reading is
data, not an error. On a machine without NVML every field is None and there are 0 GPUs.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from types import ModuleType
from typing import TypeVar

T = TypeVar("T")

# NVML reason bit → short label; the "clocks event" names are the new spelling of "throttle".
THROTTLE_REASONS = (
    ("nvmlClocksEventReasonGpuIdle", "idle"),
    ("nvmlClocksEventReasonApplicationsClocksSetting", "app clocks"),
    ("nvmlClocksEventReasonSwPowerCap", "power cap"),
    ("nvmlClocksEventReasonHwSlowdown", "hw slowdown"),
    ("nvmlClocksEventReasonSyncBoost", "sync boost"),
    ("nvmlClocksEventReasonSwThermalSlowdown", "sw thermal"),
    ("nvmlClocksEventReasonHwThermalSlowdown", "hw thermal"),
    ("nvmlClocksEventReasonHwPowerBrakeSlowdown", "power brake"),
)


@dataclass(frozen=True)
class GpuTelemetry:
    name: str | None = None
    utilization_pct: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    temperature_c: int | None = None
    throttle_reasons: tuple[str, ...] | None = None
    missing: str | None = None  # why there are no readings at all (no driver, no GPU)

    @property
    def available(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self) if f.name != "missing")


def _read(call: Callable[[], object]) -> object | None:
    """One NVML call; NotSupported, NoPermission, a lost GPU … all read as None."""
    try:
        return call()
    except Exception:  # pynvml's NVMLError family has one subclass per status code
        return None


def decode_throttle_reasons(pynvml, mask: int | None) -> tuple[str, ...] | None:
    if mask is None:
        return None
    return tuple(label for name, label in THROTTLE_REASONS if mask & getattr(pynvml, name, 0))


def _why_no_nvml(exc: BaseException) -> str:
    """One line: no NVIDIA driver (a CPU machine), or what NVML said."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ImportError) or "NVML Shared Library Not Found" in text or "libnvidia-ml" in text:
        return "no NVIDIA driver on this machine (CPU runs only)"
    return f"NVML: {text}"


class NvmlSampler:
    """Open NVML once, sample a device cheaply many times, close at the end."""

    def __init__(self, index: int = 0):
        self.index, self.pynvml, self.handle = index, None, None
        self.missing: str | None = None

    def open(self) -> bool:
        try:
            import pynvml

            pynvml.nvmlInit()
            self.pynvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(self.index)
        except Exception as exc:  # no library, no driver, no such GPU: telemetry is simply N/A, and says why
            self.close()
            self.missing = _why_no_nvml(exc)
            return False
        return True

    def sample(self) -> GpuTelemetry:
        nvml, handle = self.pynvml, self.handle
        if nvml is None:
            return GpuTelemetry(missing=self.missing)
        memory = _read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        power = _read(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
        limit = _read(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
        return GpuTelemetry(
            name=_read(lambda: nvml.nvmlDeviceGetName(handle)),
            utilization_pct=_read(lambda: nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            memory_used_bytes=getattr(memory, "used", None), memory_total_bytes=getattr(memory, "total", None),
            power_w=None if power is None else power / 1000, power_limit_w=None if limit is None else limit / 1000,
            sm_clock_mhz=_read(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
            temperature_c=_read(lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
            throttle_reasons=decode_throttle_reasons(
                nvml, _read(lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))),
        )

    def close(self) -> None:
        if self.pynvml is not None:
            _read(self.pynvml.nvmlShutdown)
        self.pynvml, self.handle = None, None

def visible_gpu_index(local: int = 0) -> int:
    """NVML counts every GPU; the runner's cuda:N is the N-th one CUDA_VISIBLE_DEVICES names (when numbers)."""
    named = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not named:
        return local
    return int(named[local]) if local < len(named) and named[local].isdigit() else local


def _with_nvml(query: Callable[[ModuleType], T]) -> T | None:
    """One query between init and shutdown; None when NVML, a driver or the answer is missing."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return query(pynvml)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # pynvml raises its own NVMLError family, or ImportError: either way, nothing to report
        return None


def gpu_count() -> int:
    """Visible NVIDIA GPUs; 0 when NVML or a driver is missing (a laptop, a CPU node)."""
    return _with_nvml(lambda nvml: nvml.nvmlDeviceGetCount()) or 0


def visible_gpu_count() -> int:
    """The GPUs a CUDA process here may use: CUDA_VISIBLE_DEVICES narrows NVML's count (NVML itself ignores it)."""
    count = gpu_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return count
    return min(count, len([d for d in visible.split(",") if d.strip() and not d.strip().startswith("-")]))


def gpu_memory_total(index: int = 0) -> int | None:
    """The GPU's memory in bytes; None without NVML or that GPU."""
    return _with_nvml(lambda nvml: int(nvml.nvmlDeviceGetMemoryInfo(nvml.nvmlDeviceGetHandleByIndex(index)).total))


def driver_version() -> str | None:
    return _with_nvml(lambda nvml: nvml.nvmlSystemGetDriverVersion())


def gpu_name() -> str | None:
    """The name of the GPU a CUDA process here uses first: the first id of CUDA_VISIBLE_DEVICES where it is a
    number, else NVML's GPU 0; None without NVML."""
    first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    index = int(first) if first.isdigit() else 0
    return _with_nvml(lambda nvml: str(nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(index))))


def gpu_use(index: int) -> tuple[int, int] | None:
    """(compute processes, bytes of memory in use) on NVML's GPU `index`; None without NVML or that GPU. A container
    may not see another's processes, but it sees their memory."""
    def query(nvml: ModuleType) -> tuple[int, int]:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        return len(nvml.nvmlDeviceGetComputeRunningProcesses(handle)), int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
    return _with_nvml(query)
