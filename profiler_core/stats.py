"""Summary statistics of timings: small, dependency-free, the same for every phase."""
from __future__ import annotations

import statistics

STAT_KEYS = ("mean_ms", "std_ms", "median_ms", "min_ms", "max_ms", "cv", "n")


def summarize_ms(samples_ms: list[float]) -> dict[str, float | int | None]:
    """mean, sample std, median, min, max, coefficient of variation and n of a list of milliseconds."""
    n = len(samples_ms)
    if n == 0:
        return {key: None for key in STAT_KEYS} | {"n": 0}
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
