"""How much memory a candidate will need, estimated from what the diagnosis's process measured (pure: no torch).

Before the diagnosis only the built-in model's prediction is known (memory/accounting.py). After it, the baseline's
measured peaks per phase: the lowest of them (the optimizer step's, in a training step) is what stays between steps —
weights, gradients, optimizer state —, the rest is the step's activations and temporaries, which grow with the
batch. A user's model has no prediction, so that split is all there is to say whether a larger batch fits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.units import format_bytes
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.memory.fit import HOST_MEMORY, fit_problem, predicted_lower_bound

# The share of the device's memory a candidate may be estimated to need once the baseline's peak is measured: the
# CUDA context and the allocator's fragmentation take the rest. 2.7B fp32 at batch 8 (ctx 512), estimated at 99.4% of
# an H100's 79.65 GiB, ended OOM in its first process.
MEASURED_HEADROOM = 0.95
# What activation checkpointing leaves of the rest of a user's model's peak (its blocks' inputs, one block's tensors,
# the head's): the built-in model's prediction keeps 7% of it at 2.7B; a half errs towards not fitting.
CHECKPOINTED_SHARE = 0.5
SHARED_MEMORY_SHARE = 0.8  # of the device: every arm's estimated peak together, for arms to share one process


@dataclass(frozen=True)
class Seen:
    """What the diagnosis's process showed that decides whether a candidate applies (nothing before it ran)."""
    peak_scale: float | None = None  # the baseline's measured peak over its predicted one (measured_peak_scale)
    factory_kwargs: dict[str, Any] | None = None  # the arguments the runner gave a user's factory (its manifest)
    measured_peak: int | None = None  # bytes: what the baseline needed, and ran with
    kept_bytes: int | None = None  # bytes: its lowest phase peak of several (what stays between steps), else None
    batch: int | None = None  # the batch those peaks were measured at
    capability: str | None = None  # the GPU's compute capability ("9.0"), None before the diagnosis or on a CPU
    checkpointed: bool = False  # whether those peaks were measured with activation checkpointing on


def seen_of(base: RunConfig, phase_peaks: dict[str, int], factory_kwargs: dict[str, Any] | None,
            capability: str | None = None) -> Seen:
    """Seen from the baseline's measured peak per phase ({} where its process did not end ok)."""
    measured = max(phase_peaks.values(), default=None)
    kept = min(phase_peaks.values()) if len(phase_peaks) > 1 else None
    return Seen(measured_peak_scale(base, measured), factory_kwargs, measured, kept, base.batch, capability,
                base.activation_checkpointing)


def measured_peak_scale(cfg: RunConfig, measured_peak: int | None) -> float | None:
    """The baseline's measured peak over its predicted one; None where the prediction is not this model's."""
    if not measured_peak or not predicted(cfg):
        return None
    return measured_peak / predict_run_memory(cfg)["peak_bytes"]


def predicted(cfg: RunConfig) -> bool:
    return not cfg.model_factory and (cfg.nproc == 1 or cfg.parallel == "ddp")  # the formula: the built-in model's


def estimated_peak(cfg: RunConfig, seen: Seen) -> int | None:
    """Bytes the config is estimated to need: the prediction scaled by what the baseline measured, or (a user's
    model) what stays between steps plus the rest grown with the batch. None before the diagnosis measured a peak.
    Neither counts what a dtype or a compile saves: an estimate that errs towards not fitting."""
    if seen.peak_scale is not None and predicted(cfg):
        return int(predict_run_memory(cfg)["peak_bytes"] * seen.peak_scale)
    if not seen.measured_peak:
        return None
    kept = seen.kept_bytes or 0
    growth = max(cfg.batch / (seen.batch or cfg.batch), 1.0)
    if cfg.activation_checkpointing and not seen.checkpointed:
        growth *= CHECKPOINTED_SHARE
    return int(kept + (seen.measured_peak - kept) * growth)


def fit_problem_seen(changed: RunConfig, limit: tuple[int, str] | None, seen: Seen) -> str | None:
    """Before the diagnosis: the prediction's lower bound is more than the device has. After it: the estimated peak
    leaves less than the headroom free, and is more than the baseline needed (what the baseline ran with is never
    refused)."""
    if limit is None:
        return None
    if fit_problem(changed, limit):
        return (f"would need ≥ {format_bytes(predicted_lower_bound(changed))} of {limit[1]} "
                f"({format_bytes(limit[0])})")
    estimate = estimated_peak(changed, seen)
    if estimate is None or estimate <= max(limit[0] * MEASURED_HEADROOM, seen.measured_peak or 0):
        return None
    return (f"would need about {format_bytes(estimate)} of {limit[1]} ({format_bytes(limit[0])}): the baseline's "
            f"measured peak, grown with the change, leaves under {1 - MEASURED_HEADROOM:.0%} free")


def sharing_problem(configs: list[RunConfig], limit: tuple[int, str] | None, seen: Seen) -> str | None:
    """Why these configurations cannot be arms of one process (None: they can): the sum of their estimated peaks
    must fit in SHARED_MEMORY_SHARE of the device, since each arm keeps its weights and optimizer state between its
    blocks. Summing peaks overstates it (one arm's activations live at a time): an estimate that errs towards fresh
    processes."""
    if limit is None or limit[1] == HOST_MEMORY:
        return None  # the CPU's allocator is not recorded, and the models a CPU measures are small beside its RAM
    if seen.measured_peak is None:
        return "the baseline's peak memory was not measured"
    total = sum(estimated_peak(cfg, seen) or 0 for cfg in configs)
    if total <= limit[0] * SHARED_MEMORY_SHARE:
        return None
    return (f"together they would need about {format_bytes(total)} of {limit[1]}'s {format_bytes(limit[0])}: "
            "one fresh process each")
