"""Turn per-step records into the run summary (`sysprof run --json`); pure Python, rebuildable offline."""
from __future__ import annotations

from profiler_core.config import RunConfig
from profiler_core.peaks import matmul_precision_used, peak_tflops
from profiler_core.stats import summarize_ms
from models.presets import count_params, step_flops

PHASES = ("forward", "backward", "optimizer")


def phase_stats(measured_steps: list[dict]) -> dict[str, dict]:
    """Stats per phase that ran, plus the whole step's wall time."""
    stats = {}
    for phase in PHASES:
        samples = [s["phases_ms"][phase] for s in measured_steps if s["phases_ms"].get(phase) is not None]
        if samples:
            stats[phase] = summarize_ms(samples)
    stats["step"] = summarize_ms([s["wall_ms"] for s in measured_steps])
    return stats


def peak_memory_by_phase(measured_steps: list[dict], key: str = "peak_allocated_bytes") -> dict[str, int]:
    """Highest max_memory_allocated (or reserved) per phase over the measured steps (absent off CUDA)."""
    peaks: dict[str, int] = {}
    for step in measured_steps:
        for phase, value in (step.get(key) or {}).items():
            peaks[phase] = max(peaks.get(phase, 0), value)
    return peaks


def throughput(cfg: RunConfig, env: dict, median_step_ms: float | None) -> dict:
    """tokens/s, achieved TFLOP/s and MFU from the median step; MFU is None without a known peak."""
    flops = step_flops(cfg.spec(), cfg.batch, cfg.ctx, cfg.mode)
    precision = matmul_precision_used(cfg.dtype, env.get("float32_matmul_precision", cfg.matmul_precision))
    peak = peak_tflops(env.get("device_name"), precision) if env.get("device_type") == "cuda" else None
    if not median_step_ms:
        return {"flops_per_step": flops, "precision_used": precision, "peak_tflops": peak,
                "tokens_per_s": None, "tflops": None, "mfu": None}
    seconds = median_step_ms / 1e3
    tflops = flops / seconds / 1e12
    return {"flops_per_step": flops, "precision_used": precision, "peak_tflops": peak,
            "tokens_per_s": cfg.batch * cfg.ctx / seconds, "tflops": tflops,
            "mfu": tflops / peak if peak else None}


def build_summary(cfg: RunConfig, env: dict, steps: list[dict], status: str, run_dir: str,
                  compile_s: float | None = None, error: dict | None = None) -> dict:
    measured = [s for s in steps if s.get("kind") == "measured"]
    phases = phase_stats(measured) if measured else {}
    median = phases.get("step", {}).get("median_ms")
    summary = {
        "status": status, "run_dir": run_dir, "config": cfg.to_dict(), "env": env,
        "params": count_params(cfg.spec()), "phases": phases,
        "warmup_ms": [s["wall_ms"] for s in steps if s.get("kind") == "warmup"],
        "compile_s": compile_s, "peak_memory_bytes": peak_memory_by_phase(measured),
        "peak_reserved_bytes": peak_memory_by_phase(measured, "peak_reserved_bytes"),
        **throughput(cfg, env, median),
    }
    if error:
        summary["error"] = error
    return summary
