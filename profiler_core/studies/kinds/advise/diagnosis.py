"""The advisor's diagnosis of the baseline: one profiled process of the config as given, read as where its step's
time goes. Per phase: its share of the step, launch-bound or GPU-bound (kernels/launch_verdict.py), its GEMM share
and what would help; for the config: precision, attention, optimizer implementation, compile, and the memory
headroom on this device. Pure: the run's summary and kernel analysis in, rows and hints out (no torch).

The hints only reorder the plan for a budget cut (advice.plan): a launch-bound step puts CUDA graphs and a larger
batch first, a small attention share puts SDPA last. What the advisor recommends is still what it measured.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sysprof.profiler_core.base.units import format_bytes
from sysprof.profiler_core.kernels.launch_verdict import LAUNCH_BOUND
from sysprof.profiler_core.studies.kinds.advise.candidates import FP8_LINEARS, Candidate

PHASES = ("forward", "backward", "optimizer")
NO_PROFILE = {"cpu": "no profile: kernel tables need CUDA", "none": "no profile: the profiled pass left none"}
# "bf16 will not help" a GPU that waits for launches; FP8 adds scaling kernels to every linear layer's launches
LAUNCH_BOUND_WEIGHT = {"torch.compile reduce-overhead": 1.5, "batch": 1.3, "bf16 autocast": 0.6,
                       "TF32 for fp32 matmuls": 0.6, FP8_LINEARS: 0.5}


@dataclass(frozen=True)
class Hints:
    launch_bound: tuple[str, ...] = ()  # the phases the profile called launch-bound
    attention_share: float | None = None  # of the step's kernel time (naive attention's ranges)
    optimizer_share: float | None = None  # of the step's wall time

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def hints(summary: dict | None, analysis: dict | None) -> Hints:
    """What the diagnosis says that orders the candidates (empty where the process or its profile is missing)."""
    if not summary or summary.get("status") != "ok":
        return Hints()
    launch_bound = tuple(p for p in PHASES if (_launch(analysis, p) or {}).get("verdict") == LAUNCH_BOUND)
    return Hints(launch_bound, _attention_share(analysis), _share_of_step(summary, "optimizer"))


def weighted(found: list[Candidate], hint: Hints) -> list[Candidate]:
    """The candidates with their priors moved by the diagnosis (only the order of a budget cut changes)."""
    def weight(candidate: Candidate) -> float:
        factor = 1.0
        if hint.launch_bound:
            key = "batch" if candidate.name.startswith("batch ") else candidate.name
            factor *= LAUNCH_BOUND_WEIGHT.get(key, 1.0)
        if candidate.name == "SDPA attention" and hint.attention_share is not None:
            return 1.0 + hint.attention_share  # it can at most remove the attention's time
        if candidate.moves == "optimizer" and hint.optimizer_share is not None:
            return 1.0 + hint.optimizer_share
        return candidate.prior * factor
    return [dataclasses.replace(c, prior=weight(c)) for c in found]


def phase_rows(summary: dict | None, analysis: dict | None) -> list[dict[str, Any]]:
    """Per phase: median ms, % of the step, the launch verdict with busy and host-wait %, GEMM %, what helps."""
    if not summary or summary.get("status") != "ok":
        return [{"phase": "baseline", "verdict": f"no diagnosis: the profiled process ended "
                                                 f"{(summary or {}).get('status', 'without a summary')}"}]
    phases = summary.get("phases") or {}
    missing = NO_PROFILE["cpu" if (summary.get("env") or {}).get("device_type") == "cpu" else "none"]
    rows = []
    for phase in PHASES:
        if phase not in phases:
            continue
        launch = _launch(analysis, phase) or {}
        share = _share_of_step(summary, phase)
        rows.append({"phase": phase, "ms": round(phases[phase]["median_ms"], 2),
                     "% of step": None if share is None else round(100 * share, 1),
                     "verdict": launch.get("verdict", missing), "busy %": launch.get("busy_pct"),
                     "host-wait %": launch.get("host_wait_pct"), "GEMM %": _gemm_percent(analysis, phase),
                     "helps": launch.get("remedy")})
    return rows


def config_rows(summary: dict | None, analysis: dict | None, predicted_peak: int | None) -> list[dict[str, Any]]:
    """The config's facts the candidates act on: precision, attention, optimizer, compile, memory headroom."""
    if not summary or summary.get("status") != "ok":
        return []
    config, env = summary.get("config") or {}, summary.get("env") or {}
    return [
        {"what": "precision", "as run": _precision(config)},
        {"what": "attention", "as run": config.get("attention", "naive") + _attention_text(analysis)},
        {"what": "optimizer", "as run": f"{config.get('optimizer', 'torch.optim.AdamW')}, "
                                        f"{config.get('optimizer_impl', 'default')} implementation"},
        {"what": "compile", "as run": config.get("compile_mode", "default") if config.get("compile") else "eager"},
        {"what": "memory", "as run": _headroom(summary, env, predicted_peak)},
    ]


def _precision(config: dict) -> str:
    if config.get("dtype", "fp32") != "fp32":
        return f"{config['dtype']} autocast"
    precision = config.get("matmul_precision", "highest")
    return "fp32, matmuls " + ("strict fp32" if precision == "highest" else f"{precision} (TF32)")


def _headroom(summary: dict, env: dict, predicted_peak: int | None) -> str:
    measured = max((summary.get("peak_memory_bytes") or {}).values(), default=None)
    total = env.get("total_memory_bytes")
    peak = measured if measured is not None else predicted_peak
    what = "measured" if measured is not None else "predicted"
    if peak is None:
        return "peak not known (a CPU run's allocator is not recorded; your model's is not predicted)"
    text = f"{what} peak {format_bytes(peak)}"
    return text + (f" of {format_bytes(total)}: {format_bytes(total - peak)} free for a larger batch"
                   if total else "")


def _launch(analysis: dict | None, phase: str) -> dict | None:
    return (((analysis or {}).get("phases") or {}).get(phase) or {}).get("launch")


def _gemm_percent(analysis: dict | None, phase: str) -> float | None:
    fraction = ((analysis or {}).get("gemm_fraction") or {}).get(phase)
    return None if fraction is None else round(100 * fraction, 1)


def _attention_text(analysis: dict | None) -> str:
    share = _attention_share(analysis)
    if share is not None:
        return f": {100 * share:.1f}% of the step's kernel time"
    if ((analysis or {}).get("attention") or {}).get("ranges") == 0:
        return ": its share is not known (the profile has no attention ranges: a user's model or a compiled one)"
    return ""


def _attention_share(analysis: dict | None) -> float | None:
    """Of the step's kernel time; None without a profile or without attention ranges in it (a user's model marks
    none, inductor's graph drops them): no ranges is not "0%"."""
    total = ((analysis or {}).get("totals") or {}).get("gpu_ns")
    attention = (analysis or {}).get("attention") or {}
    if not total or attention.get("gpu_ns") is None or attention.get("ranges") == 0:
        return None
    return attention["gpu_ns"] / total


def _share_of_step(summary: dict, phase: str) -> float | None:
    """The phase's mean over the step's: means add up (the phases' medians need not, and may pass 100%)."""
    phases = summary.get("phases") or {}
    step, part = phases.get("step"), phases.get(phase)
    if not step or not part or not step.get("mean_ms"):
        return None
    return part["mean_ms"] / step["mean_ms"]
