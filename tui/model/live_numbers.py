"""Numbers the Live screen derives from a RunState: running stats, numbers.throughput, the profiled pass (pure)."""
from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from sysprof.profiler_core.api import PhaseStats, RunConfig, numbers
from sysprof.tui.model.state import RunState

CHART_SERIES = ("wall", "data", "forward", "backward", "optimizer", "eval")
OWN_LOOP_SERIES = ("data", "eval")  # a traced loop's wait for data and its evaluations: charted once a step has them


def running_phases(state: RunState) -> dict[str, PhaseStats]:
    """The summary's stats once the run ended, else stats over the measured steps so far."""
    finished = numbers.phases_of(state.summary)
    if finished:
        return finished
    return numbers.phase_stats(list(state.steps)) if state.steps else {}


def running_throughput(state: RunState) -> Mapping[str, Any]:
    """tokens/s, TFLOP/s and MFU from the median step (the summary's when there is one)."""
    if state.summary and "tokens_per_s" in state.summary:
        return state.summary
    median = _step_median(state)
    if not state.config or not median:
        return {}
    try:
        cfg = RunConfig.from_dict(state.config)
        return numbers.throughput(cfg, state.env or {}, median, state.flops_per_step)
    except (TypeError, ValueError):  # a config written by another version: no live numbers.throughput
        return {}


def profiled_numbers(state: RunState) -> Mapping[str, Any] | None:
    """{"backend", "profiled_median_ms", "clean_median_ms", "inflation"}: the summary's record, else live."""
    if state.summary and state.summary.get("profile"):
        return state.summary["profile"]
    profiled = [s["wall_ms"] for s in state.profiled_steps() if s.get("kind") != "warmup"]
    if not profiled:
        return None
    clean = _step_median(state)
    median = statistics.median(profiled)
    return {"backend": (state.config or {}).get("profiler"), "profiled_median_ms": median,
            "clean_median_ms": clean, "inflation": median / clean if clean else None}  # as the session: a ratio


def _step_median(state: RunState) -> float | None:
    step = running_phases(state).get("step")
    return step.get("median_ms") if step else None


def chart_series(state: RunState) -> dict[str, list[float]]:
    """Per series, the step times in ms of warm-up then measured steps (warm-up effects stay visible)."""
    steps = list(state.warmup_steps) + list(state.steps)
    series = {"wall": [s["wall_ms"] for s in steps]}
    for phase in CHART_SERIES[1:]:
        series[phase] = [s["phases_ms"][phase] for s in steps if s.get("phases_ms", {}).get(phase) is not None]
    return series
