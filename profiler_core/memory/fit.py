"""Will the config fit? The predicted lower bound on a step's memory against what the run's device has: GPU 0's
memory (NVML) or, on the CPU, the host's RAM. Said before the run, so that a context of 99,999,999 is refused in
a second instead of failing after a minute of swapping. The predicted peak was within 5% of the measured one for
every preset at ctx 128-512 (benchmarks/memory/README.md); a config is refused only when even 10% less would not fit,
so a refusal is certain; passing is not a promise."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.nvml import gpu_memory_total, visible_gpu_count
from sysprof.profiler_core.base.units import format_bytes
from sysprof.profiler_core.memory.accounting import predict_run_memory

# How far below its prediction a peak has been seen to fall, and then some: the margin a refusal leaves.
PREDICTION_MARGIN = 0.10


def predicted_lower_bound(cfg: RunConfig) -> int:
    """Bytes the step certainly needs: its predicted peak less the margin."""
    return int(predict_run_memory(cfg)["peak_bytes"] * (1 - PREDICTION_MARGIN))


HOST_MEMORY = "the host's RAM"


def device_memory(device: str) -> tuple[int, str] | None:
    """(bytes, what they are) for the run's device; None where it cannot be told (MPS, no NVML reading)."""
    gpu = device == "cuda" or (device == "auto" and visible_gpu_count() > 0)
    if gpu:
        total = gpu_memory_total(0)
        return (total, "GPU 0's memory") if total else None
    if device in ("cpu", "auto"):
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), HOST_MEMORY
        except (ValueError, OSError):
            return None
    return None


def fit_problem(cfg: RunConfig, limit: tuple[int, str] | None) -> str | None:
    """One line when the config's predicted memory is more than the device has (None: fits, or unknown)."""
    if limit is None or cfg.model_factory or (cfg.nproc > 1 and cfg.parallel != "ddp"):
        return None  # the formula is the built-in model's, whole on each rank
    needed = predicted_lower_bound(cfg)
    if needed <= limit[0]:
        return None
    return (f"predicted peak memory ≥ {format_bytes(needed)} is more than {limit[1]} ({format_bytes(limit[0])}): "
            "it cannot fit; lower ctx or batch (--force runs it anyway)")


def cells_fit_problem(configs: Sequence[RunConfig], label: Callable[[RunConfig], str]) -> str | None:
    """The first cell of a sweep or study that cannot fit, named by label, and how many more there are: refused
    before the first cell runs, as `sysprof run` refuses one config."""
    limits = {device: device_memory(device) for device in {cfg.device for cfg in configs}}
    too_big = [(cfg, problem) for cfg in configs if (problem := fit_problem(cfg, limits[cfg.device]))]
    if not too_big:
        return None
    more = f" (and {len(too_big) - 1} more cells)" if len(too_big) > 1 else ""
    return f"cell {label(too_big[0][0])}{more}: {too_big[0][1]}"
