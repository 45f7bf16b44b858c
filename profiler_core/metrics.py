"""Numbers about steps: per-phase statistics, throughput, MFU against the GPU's dense peak, the run summary.

Pure Python, rebuildable offline from steps.jsonl (the app computes its live numbers with the same functions).
Peak figures are NVIDIA's datasheet dense (non-sparse) numbers. A GPU not listed gets None (shown as N/A):
an MFU against a guessed peak would be a made-up number.
"""
from __future__ import annotations

import statistics
from typing import Literal

from models.phases import PHASES, STEP
from models.presets import count_params, step_flops
from profiler_core.config import AUTOCAST_DTYPES, FP32_MATMULS, RunConfig
from profiler_core.records import PhaseStats, RunError, RunSummary, StepRecord, Throughput, median_ms

STAT_KEYS = tuple(PhaseStats.__annotations__)


def summarize_ms(samples_ms: list[float]) -> PhaseStats:
    """mean, sample std, median, min, max, coefficient of variation and n of a list of milliseconds."""
    n = len(samples_ms)
    if n == 0:
        return PhaseStats(mean_ms=None, std_ms=None, median_ms=None, min_ms=None, max_ms=None, cv=None, n=0)
    mean = statistics.fmean(samples_ms)
    std = statistics.stdev(samples_ms) if n > 1 else 0.0
    return {
        "mean_ms": mean,
        "std_ms": std,
        "median_ms": statistics.median(samples_ms),
        "min_ms": min(samples_ms),
        "max_ms": max(samples_ms),
        "cv": std / mean if mean > 0 else None,
        "n": n,
    }


# (substring of the device name, {matmul precision: dense TFLOP/s}); first match wins, so PCIe before SXM.
PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"bf16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    ("H200", {"bf16": 989.0, "tf32": 495.0, "fp32": 67.0}),
    ("H100", {"bf16": 989.0, "tf32": 495.0, "fp32": 67.0}),
    ("A100", {"bf16": 312.0, "tf32": 156.0, "fp32": 19.5}),
)


def matmul_precision_used(dtype: str, float32_matmul_precision: str) -> str:
    """What the tensor cores run: half types under autocast, else fp32 strict or TF32."""
    if dtype in AUTOCAST_DTYPES:
        return "bf16"  # fp16 and bf16 have the same dense peak on these GPUs
    # "medium" lets the library pick bf16 or TF32 per matmul: no single peak applies, so MFU is N/A.
    return FP32_MATMULS.get(float32_matmul_precision, FP32_MATMULS["medium"])


def peak_tflops(device_name: str | None, precision: str) -> float | None:
    if not device_name:
        return None
    for needle, peaks in PEAK_TFLOPS:
        if needle in device_name:
            return peaks.get(precision)
    return None


def phase_stats(measured_steps: list[StepRecord]) -> dict[str, PhaseStats]:
    """Stats per phase that ran, plus the whole step's wall time."""
    stats: dict[str, PhaseStats] = {}
    for phase in PHASES:
        samples = [s["phases_ms"][phase] for s in measured_steps if s["phases_ms"].get(phase) is not None]
        if samples:
            stats[phase] = summarize_ms(samples)
    stats[STEP] = summarize_ms([s["wall_ms"] for s in measured_steps])
    return stats


PeakKey = Literal["peak_allocated_bytes", "peak_reserved_bytes"]


def peak_memory_by_phase(measured_steps: list[StepRecord], key: PeakKey = "peak_allocated_bytes") -> dict[str, int]:
    """Highest max_memory_allocated (or reserved) per phase over the measured steps (absent off CUDA)."""
    peaks: dict[str, int] = {}
    for step in measured_steps:
        for phase, value in (step.get(key) or {}).items():
            peaks[phase] = max(peaks.get(phase, 0), value)
    return peaks


def throughput(cfg: RunConfig, env: dict, median_step_ms: float | None, flops: int | None = None) -> Throughput:
    """tokens/s, achieved TFLOP/s and MFU from the median step; MFU is None without a known peak.

    `flops`: the user's model's FLOPs per step, counted by the runner (the closed form is the built-in model's);
    without them a user's model gets no TFLOP/s and no MFU."""
    if cfg.model_factory is None:
        flops = step_flops(cfg.spec(), cfg.batch, cfg.ctx, cfg.mode)
    precision = matmul_precision_used(cfg.dtype, env.get("float32_matmul_precision", cfg.matmul_precision))
    peak = peak_tflops(env.get("device_name"), precision) if env.get("device_type") == "cuda" else None
    if not median_step_ms:
        return {"flops_per_step": flops, "precision_used": precision, "peak_tflops": peak,
                "tokens_per_s": None, "tflops": None, "mfu": None}
    seconds = median_step_ms / 1e3
    tflops = flops / seconds / 1e12 if flops else None
    return {"flops_per_step": flops, "precision_used": precision, "peak_tflops": peak,
            "tokens_per_s": cfg.batch * cfg.ctx / seconds, "tflops": tflops,
            "mfu": tflops / peak if peak and tflops else None}


def build_summary(cfg: RunConfig, env: dict, steps: list[StepRecord], status: str, run_dir: str,
                  compile_s: float | None = None, error: RunError | None = None,
                  params: int | None = None, flops: int | None = None) -> RunSummary:
    """The run's summary; `params` and `flops` are the user's model's counts (the built-in one's are exact)."""
    measured = [s for s in steps if s.get("kind") == "measured"]
    phases = phase_stats(measured) if measured else {}
    summary = RunSummary(
        status=status, run_dir=run_dir, config=cfg.to_dict(), env=env, params=params or count_params(cfg.spec()),
        phases=phases, warmup_ms=[s["wall_ms"] for s in steps if s.get("kind") == "warmup"], compile_s=compile_s,
        peak_memory_bytes=peak_memory_by_phase(measured),
        peak_reserved_bytes=peak_memory_by_phase(measured, "peak_reserved_bytes"),
        **throughput(cfg, env, median_ms({"phases": phases}), flops),
    )
    if error:
        summary["error"] = error
    return summary
