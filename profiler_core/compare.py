"""Compare two runs phase by phase: the ratio of medians and whether the gap is bigger than the noise.

Verdict rule (documented in the Help screen and tested): B is "faster" or "slower" than A only when

    |median_B − median_A| > NOISE_SIGMAS · sqrt(std_A² + std_B²)

where std is the sample standard deviation of that phase over each run's measured steps. Two runs of the
same configuration differ by about sqrt(2)·std per step; 2σ of that keeps "same config, different run"
inside "within noise" most of the time without hiding real speedups of a few per cent on quiet GPUs.
With fewer than 2 steps in either run there is no spread to compare against: "too few steps".
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from models.phases import TIMED_PHASES

NOISE_SIGMAS = 2.0


def noise_threshold_ms(stats_a: Mapping[str, Any], stats_b: Mapping[str, Any]) -> float:
    return NOISE_SIGMAS * math.hypot(stats_a.get("std_ms") or 0.0, stats_b.get("std_ms") or 0.0)


def verdict(stats_a: Mapping[str, Any], stats_b: Mapping[str, Any]) -> str:
    """"faster" / "slower" (B relative to A), "within noise", or "too few steps"."""
    if min(stats_a.get("n") or 0, stats_b.get("n") or 0) < 2:
        return "too few steps"
    difference = stats_b["median_ms"] - stats_a["median_ms"]
    if abs(difference) <= noise_threshold_ms(stats_a, stats_b):
        return "within noise"
    return "faster" if difference < 0 else "slower"


def compare_phase(phase: str, stats_a: Mapping[str, Any], stats_b: Mapping[str, Any]) -> dict:
    median_a, median_b = stats_a.get("median_ms"), stats_b.get("median_ms")
    ratio = median_b / median_a if median_a and median_b is not None else None
    return {
        "phase": phase,
        "a_median_ms": median_a,
        "b_median_ms": median_b,
        "ratio_b_over_a": None if ratio is None else round(ratio, 4),
        "speedup_a_over_b": None if not ratio else round(1 / ratio, 4),
        "noise_ms": round(noise_threshold_ms(stats_a, stats_b), 4),
        "verdict": verdict(stats_a, stats_b) if ratio is not None else "missing",
    }


def compare_summaries(summary_a: Mapping[str, Any], summary_b: Mapping[str, Any]) -> list[dict]:
    """One row per phase present in both runs (the step row last); a RunSummary or any summary read from disk."""
    phases_a, phases_b = summary_a.get("phases") or {}, summary_b.get("phases") or {}
    return [compare_phase(phase, phases_a[phase], phases_b[phase])
            for phase in TIMED_PHASES if phase in phases_a and phase in phases_b]
