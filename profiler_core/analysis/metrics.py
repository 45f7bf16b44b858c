"""Numbers about steps: per-phase statistics, throughput, MFU against the GPU's dense peak (peaks.py), the run
summary, and the statistics across the processes of one config (a group of repeats).

Pure Python, rebuildable offline from steps.jsonl (the app computes its live numbers with the same functions).
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from sysprof.models.phases import BACKWARD, FORWARD, FORWARD_BACKWARD, PHASES, STEP, TIMED_PHASES
from sysprof.models.presets import count_params, step_flops
from sysprof.profiler_core.analysis.energy import group_energy, tokens_per_joule
from sysprof.profiler_core.analysis.peaks import matmul_precision_used, peak_tflops
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.events import OK, with_state
from sysprof.profiler_core.base.records import (
    BetweenStats,
    PhaseStats,
    ProcessRecord,
    RunError,
    RunSummary,
    StepRecord,
    Throughput,
    median_ms,
    phases_of,
)

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


def phase_stats(measured_steps: list[StepRecord]) -> dict[str, PhaseStats]:
    """Stats per phase that ran, plus the whole step's wall time; a traced loop's own phases (data, eval) first, in
    the order its steps first name them."""
    stats: dict[str, PhaseStats] = {}
    own = list(dict.fromkeys(phase for s in measured_steps for phase in s["phases_ms"] if phase not in PHASES))
    for phase in [*own, *PHASES]:
        samples = [s["phases_ms"][phase] for s in measured_steps if s["phases_ms"].get(phase) is not None]
        if samples:
            stats[phase] = summarize_ms(samples)
    both = [s["phases_ms"][FORWARD] + s["phases_ms"][BACKWARD] for s in measured_steps
            if s["phases_ms"].get(FORWARD) is not None and s["phases_ms"].get(BACKWARD) is not None]
    if both:  # each step's sum, so its median and spread are the sum's, not a sum of medians
        stats[FORWARD_BACKWARD] = summarize_ms(both)
    stats[STEP] = summarize_ms([s["wall_ms"] for s in measured_steps])
    return {phase: stats[phase] for phase in [*own, *TIMED_PHASES] if phase in stats}


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


def mfu_missing(numbers: Mapping[str, Any], env: Mapping[str, Any]) -> str | None:
    """Why MFU is N/A, in a few words (None when it is there)."""
    if numbers.get("mfu") is not None:
        return None
    device = env.get("device_type")
    if device and device != "cuda":
        return f"no peak FLOP/s for a {device.upper()} run"
    if numbers.get("flops_per_step") is None:
        return "your model's FLOPs per step are not counted"
    if numbers.get("peak_tflops") is None:
        return f"peak {numbers.get('precision_used')} FLOP/s of {env.get('device_name') or 'this GPU'} unknown"
    return "no step timed yet"


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
    return with_state(summary)


# Between processes. Each process's median is one observation: a within-run std cannot see what changes from one
# process to the next (clocks, other tenants, allocator and autotuning state), so spread is measured across them.
IQR_TO_STD = 0.7413  # IQR × this = std of a normal distribution with that IQR: a CV that one outlier cannot inflate
THROUGHPUT = "tokens_per_s"


def between_process_stats(values: list[float]) -> BetweenStats:
    """Median, range, quartiles and CVs of per-process values; the spread is None (unknown) below 2 processes."""
    n = len(values)
    middle = statistics.median(values) if n else None
    q1 = q3 = cv_pct = robust_cv_pct = None
    if n > 1 and middle is not None:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")  # numpy's default (linear) quartiles
        mean = statistics.fmean(values)
        cv_pct = statistics.stdev(values) / mean * 100 if mean > 0 else None
        robust_cv_pct = IQR_TO_STD * (q3 - q1) / middle * 100 if middle > 0 else None
    return BetweenStats(n=n, values=list(values), median=middle, min=min(values) if n else None,
                        max=max(values) if n else None, q1=q1, q3=q3, iqr=None if q1 is None or q3 is None else q3 - q1,
                        cv_pct=cv_pct, robust_cv_pct=robust_cv_pct)


def _median_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def group_phase_stats(per_process: list[PhaseStats]) -> PhaseStats:
    """A phase over processes, in PhaseStats' shape so every reader keeps working: median_ms is the median of the
    per-process medians, std_ms and cv the median within-run ones, min/max the range of the medians."""
    medians = [s["median_ms"] for s in per_process if s["median_ms"] is not None]
    means = [s["mean_ms"] for s in per_process if s["mean_ms"] is not None]
    return PhaseStats(mean_ms=statistics.fmean(means) if means else None,
                      std_ms=_median_of([s["std_ms"] for s in per_process]),
                      median_ms=_median_of(medians), min_ms=min(medians, default=None),
                      max_ms=max(medians, default=None), cv=_median_of([s["cv"] for s in per_process]),
                      n=sum(s["n"] for s in per_process))


def process_record(summary: Mapping[str, Any]) -> ProcessRecord:
    phases = phases_of(summary)
    record = ProcessRecord(status=summary.get("status", "unknown"),
                           phases={phase: stats.get("median_ms") for phase, stats in phases.items()},
                           std_ms={phase: stats.get("std_ms") for phase, stats in phases.items()},
                           tokens_per_s=summary.get(THROUGHPUT))
    if summary.get("ran"):
        record["ran"] = summary["ran"]
    per_joule = tokens_per_joule(summary)
    if per_joule is not None:
        record["tokens_per_joule"] = per_joule
    if summary.get("shared_process"):  # an arm of a process it shared with other configurations (runner/arms.py)
        record["shared_process"] = summary["shared_process"]
    return record


def aggregate_processes(summaries: list[RunSummary], requested: int | None = None) -> dict[str, Any]:
    """The statistics of a group summary from its processes' summaries (only those that finished ok count):
    phases, between (phase or tokens_per_s → BetweenStats), repeats (the per-process medians compare needs), and
    tokens_per_s, tflops, mfu as medians over the processes. requested: N asked for (default: as many as given)."""
    ok = [s for s in summaries if s.get("status") == OK]
    per_phase = {phase: [s["phases"][phase] for s in ok if phase in phases_of(s)] for phase in TIMED_PHASES}
    per_phase = {phase: stats for phase, stats in per_phase.items() if stats}
    between = {phase: between_process_stats([m for s in stats if (m := s["median_ms"]) is not None])
               for phase, stats in per_phase.items()}
    throughputs = [t for s in ok if (t := s.get("tokens_per_s")) is not None]
    between[THROUGHPUT] = between_process_stats(throughputs)
    return {"phases": {phase: group_phase_stats(stats) for phase, stats in per_phase.items()}, "between": between,
            "repeats": {"n": requested or len(summaries), "ok": len(ok), "failed": len(summaries) - len(ok),
                        "processes": [process_record(s) for s in summaries]},
            THROUGHPUT: _median_of(throughputs), "tflops": _median_of([s.get("tflops") for s in ok]),
            "mfu": _median_of([s.get("mfu") for s in ok]), **_energy_of(ok)}


def _energy_of(ok: list[RunSummary]) -> dict[str, Any]:
    energy = group_energy(ok)
    return {"energy": energy} if energy else {}


def _ok_processes(summary: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    repeats = summary.get("repeats")
    return None if not repeats else [p for p in repeats.get("processes") or [] if p.get("status") == OK]


def process_medians(summary: Mapping[str, Any], phase: str) -> list[float]:
    """A phase's per-process medians (run order): from a group summary's repeats, else the single run's median."""
    processes = _ok_processes(summary)
    if processes is None:
        single = median_ms(summary, phase)
        return [] if single is None else [single]
    return [p["phases"][phase] for p in processes if phases_of(p).get(phase) is not None]


def process_throughputs(summary: Mapping[str, Any]) -> list[float]:
    """tokens/s per process (run order), like process_medians."""
    processes = _ok_processes(summary)
    if processes is None:
        return [] if summary.get(THROUGHPUT) is None else [summary[THROUGHPUT]]
    return [p[THROUGHPUT] for p in processes if p.get(THROUGHPUT) is not None]


def process_tokens_per_joule(summary: Mapping[str, Any]) -> list[float]:
    """tokens per joule per process (run order), like process_throughputs; [] where a process has no energy."""
    processes = _ok_processes(summary)
    if processes is None:
        single = tokens_per_joule(summary)
        return [] if single is None else [single]
    values = [p.get("tokens_per_joule") for p in processes]
    return [v for v in values if v is not None] if all(v is not None for v in values) else []
