"""The verdict on two sides' per-process values (two runs, or two groups of repeated processes): the ratio B/A of
the medians, its 95% interval, and a verdict that must pass two gates. Apart from compare.py, which lays out the rows
of a comparison (phases, tokens/s, tokens/J, whether the sides interleaved): these are the statistics those rows,
and the benchmarks that check them, rest on.

Why two gates on per-process medians: on a shared 2×H200 host one config (small, bf16, train, 30 steps) run in six
fresh processes gave step medians of 36.2, 39.2, 50.4, 38.3, 36.6 and 40.3 ms, a 39% spread between processes while
each run's own std was small. The earlier rule, |median B − median A| > 2·√(std A² + std B²) over the steps of one
run, called 4 of those 15 same-config pairs faster or slower: a within-run std cannot see run-to-run noise (clocks,
other tenants, allocator and autotuning state). So each process's median is one observation, and B is "faster" or
"slower" than A only when

1. significance: a test on the per-process medians finds a difference at α = 0.05 — Mann–Whitney U (two-sided,
   exact for small samples, no normality assumed) with ≥ 4 processes per side; Welch's t-test on the logarithms with
   2–3 (a rank test cannot reach p < 0.05 with 3 per side: its smallest two-sided p is 0.1); and
2. effect: |B/A − 1| ≥ the minimum effect = max(--min-effect, default 2%, and the measured between-process spread,
   the larger side's robust CV 0.7413·IQR/median): a gap smaller than what moves between two processes of one
   config is not one a user can act on (for the six medians above the spread is 5.7%).

Otherwise the verdict is "within noise", with the gate that stopped it as the reason, and any process that ran
FAR_OFF× or more from its own side's others named in it. A reported second stage of an advise on a CPU, 3.24
[0.03–17.59] with p = 0.34, is reproduced exactly by batch 8 at 205, 25,969, 26,100 and 27,944 tokens/s against a
baseline at 1,480, 6,974, 9,100 and 10,207 (one process a side far off, as processes on a shared 2-core CPU run 5 to
100× apart): U = 12 of 16. That is all 4 processes a side can say: 8 processes of one config fall into each of the 70
splits of 4 and 4 alike, and a rule that called this split (and its mirror, the sides swapped) faster or slower would
be wrong on 4 of 70 same-config pairs, where the rank test is wrong on the 2 fully separated ones. The ratio's 95%
interval is a percentile bootstrap of median(B)/median(A) with a fixed seed (the same runs give the same interval).

One process against a group: the group's processes say how far one more process of its config strays, so the lone
one is tested against that (a t prediction interval on the logarithms, n − 1 degrees of freedom), with the same
minimum effect; the interval is the lone value over the group's 95% prediction interval.

One process per side: run-to-run noise is unknown, and the within-run rule cannot stand in for it (on the busy
H200, 70 of 481 pairs of same-config processes beat it; benchmarks/compare/README.md). The answer is then "noise
unknown" when the steps alone would call B faster or slower (the reason says which way and by how much), "within
noise" when even they would not, and the advice to use --repeats either way.
"""
from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Mapping
from typing import Any

from sysprof.profiler_core.analysis.metrics import between_process_stats

ALPHA = 0.05
MIN_EFFECT = 0.02
NOISE_SIGMAS = 2.0  # the within-run rule, for one process per side
RANK_TEST_PROCESSES = 4  # per side, for Mann–Whitney U; 2–3 take Welch's t on the logs
SUGGESTED_REPEATS = 5
BOOTSTRAP_SEED, BOOTSTRAP_RESAMPLES = 14, 9999
FASTER, SLOWER, WITHIN_NOISE, TOO_FEW_STEPS, MISSING = "faster", "slower", "within noise", "too few steps", "missing"
# one process per side: the steps differ, but nothing says by more than run-to-run noise
NOISE_UNKNOWN = "noise unknown"
FAR_OFF = 3.0  # a process this many times off its side's others' median ran stalled, or alone on the node


def noise_threshold_ms(stats_a: Mapping[str, Any], stats_b: Mapping[str, Any]) -> float:
    return NOISE_SIGMAS * math.hypot(stats_a.get("std_ms") or 0.0, stats_b.get("std_ms") or 0.0)


def within_run_verdict(stats_a: Mapping[str, Any], stats_b: Mapping[str, Any]) -> str:
    """The one-process rule on two PhaseStats: "faster" / "slower" (B's median lower / higher than A's by more than
    2·√(std A² + std B²)), "within noise", or "too few steps" (no spread below 2 steps)."""
    if min(stats_a.get("n") or 0, stats_b.get("n") or 0) < 2:
        return TOO_FEW_STEPS
    difference = stats_b["median_ms"] - stats_a["median_ms"]
    if abs(difference) <= noise_threshold_ms(stats_a, stats_b):
        return WITHIN_NOISE
    return FASTER if difference < 0 else SLOWER


def significance(values_a: list[float], values_b: list[float]) -> tuple[str, float | None]:
    """(test, two-sided p) on per-process values, ≥ 2 per side; p is None when neither side varies and they agree."""
    import numpy as np
    from scipy import stats

    with warnings.catch_warnings():  # near-identical samples: scipy warns, the p-value is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        if min(len(values_a), len(values_b)) >= RANK_TEST_PROCESSES:
            return "Mann-Whitney U", float(stats.mannwhitneyu(values_a, values_b, alternative="two-sided").pvalue)
        positive = min(values_a + values_b) > 0  # times and rates are; logs make a ratio a difference
        a, b = (np.log(v) if positive else np.asarray(v) for v in (values_a, values_b))
        p = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
    return "Welch t (log)", None if math.isnan(p) else p


def ratio_interval(values_a: list[float], values_b: list[float]) -> tuple[float | None, float | None]:
    """95% percentile-bootstrap interval of median(B)/median(A), resampling each side on its own (fixed seed)."""
    import numpy as np
    from scipy import stats

    def median_ratio(a, b, axis=-1):
        return np.median(b, axis=axis) / np.median(a, axis=axis)

    with warnings.catch_warnings():  # identical resamples: "degenerate" warning, the interval is still the point
        warnings.simplefilter("ignore")
        result = stats.bootstrap((values_a, values_b), median_ratio, vectorized=True, method="percentile",
                                 n_resamples=BOOTSTRAP_RESAMPLES, rng=np.random.default_rng(BOOTSTRAP_SEED))
    low, high = (float(bound) for bound in result.confidence_interval)
    return (None, None) if math.isnan(low) or math.isnan(high) else (low, high)


def effect_floor(values_a: list[float], values_b: list[float], min_effect: float) -> tuple[float, str]:
    """The minimum effect and where it comes from: --min-effect, or the larger measured between-process spread."""
    spreads = [s for v in (values_a, values_b) if (s := between_process_stats(v)["robust_cv_pct"]) is not None]
    spread = max(spreads, default=0.0) / 100
    return (spread, "between-process spread") if spread > min_effect else (min_effect, "--min-effect")


def far_off(values: list[float]) -> list[tuple[int, float]]:
    """(run-order index, value over the median of the others) of each process FAR_OFF× or more from its side's
    other processes; with fewer than 3 a side none (of two processes, neither is the odd one)."""
    if len(values) < 3:
        return []
    found = []
    for index, value in enumerate(values):
        others = statistics.median(values[:index] + values[index + 1:])
        share = value / others if others > 0 else 1.0
        if share >= FAR_OFF or share <= 1 / FAR_OFF:
            found.append((index, share))
    return found


def far_off_note(values_a: list[float], values_b: list[float]) -> str:
    """"; far from its side's others: A's process 1 6.1× below, B's process 1 127× below" ("" when none is)."""
    parts = [f"{side}'s process {index + 1} " + (f"{share:.3g}× above" if share > 1 else
                                                  f"{1 / share:.3g}× below" if share > 0 else "at 0")
             for side, values in (("A", values_a), ("B", values_b)) for index, share in far_off(values)]
    return f"; far from its side's others: {', '.join(parts)}" if parts else ""


def _direction(ratio: float, higher_is_better: bool) -> str:
    return FASTER if (ratio > 1) == higher_is_better else SLOWER


def two_gates(ratio: float, p_value: float | None, floor: float, source: str, higher_is_better: bool,
               not_significant: str) -> tuple[str, str]:
    """Significance, then the minimum effect: (verdict, reason)."""
    effect = abs(ratio - 1)
    if p_value is None or p_value >= ALPHA:
        return WITHIN_NOISE, f"{not_significant}, " + ("no spread" if p_value is None else f"p={p_value:.2g}")
    if effect < floor:
        return WITHIN_NOISE, f"effect {effect:.1%} < {floor:.1%} ({source})"
    return _direction(ratio, higher_is_better), f"p={p_value:.2g}, effect {effect:.1%} ≥ {floor:.1%}"


def verdict(values_a: list[float], values_b: list[float], min_effect: float = MIN_EFFECT,
            higher_is_better: bool = False) -> dict[str, Any]:
    """The two-gate verdict on per-process values (≥ 2 per side): verdict, reason, test, p_value, the ratio's
    interval and the minimum effect used. higher_is_better: a rate (tokens/s), where a higher B is faster."""
    ratio = statistics.median(values_b) / statistics.median(values_a)
    test, p_value = significance(values_a, values_b)
    floor, source = effect_floor(values_a, values_b, min_effect)
    answer = two_gates(ratio, p_value, floor, source, higher_is_better, "not significant")
    ci_low, ci_high = ratio_interval(values_a, values_b)
    far = far_off_note(values_a, values_b) if answer[0] == WITHIN_NOISE else ""
    return {"verdict": answer[0], "reason": answer[1] + far, "test": test, "p_value": p_value, "ci_low": ci_low,
            "ci_high": ci_high, "min_effect": floor}


def one_process_verdict(stats_a: Mapping[str, Any], stats_b: Mapping[str, Any],
                        min_effect: float = MIN_EFFECT, higher_is_better: bool = False) -> dict[str, Any]:
    """One process per side: never faster or slower, since run-to-run noise is unknown; "noise unknown" with the
    direction the steps alone point to, or "within noise" when the gap is inside the steps' own 2σ or the minimum
    effect."""
    note = f"1 process per side: run-to-run noise unknown; use --repeats {SUGGESTED_REPEATS}"
    within, ratio = within_run_verdict(stats_a, stats_b), stats_b["median_ms"] / stats_a["median_ms"]
    effect = abs(ratio - 1)
    if within == WITHIN_NOISE:
        answer, note = WITHIN_NOISE, f"{note}; gap ≤ {NOISE_SIGMAS:g}σ of the steps"
    elif effect < min_effect:
        answer, note = WITHIN_NOISE, f"{note}; effect {effect:.1%} < {min_effect:.1%} (--min-effect)"
    else:
        answer, note = NOISE_UNKNOWN, (f"{note}; the steps alone say B is {_direction(ratio, higher_is_better)} "
                                       f"by {effect:.1%}")
    return {"verdict": answer, "reason": note, "test": f"within-run {NOISE_SIGMAS:g}σ", "p_value": None,
            "ci_low": None, "ci_high": None, "min_effect": min_effect}


def prediction(group: list[float], lone: float) -> tuple[float | None, tuple[float, float]]:
    """Two-sided p that one more process of the group's config lands as far from the group as `lone` does, and the
    group's 95% prediction interval for that process: Student's t on the logarithms, n − 1 degrees of freedom."""
    import numpy as np
    from scipy import stats

    logs = np.log(group)
    center, scale = float(logs.mean()), float(logs.std(ddof=1)) * math.sqrt(1 + 1 / len(group))
    half_width = float(stats.t.ppf(1 - ALPHA / 2, len(group) - 1)) * scale
    interval = (math.exp(center - half_width), math.exp(center + half_width))
    if scale == 0:
        return (None if math.log(lone) == center else 0.0), interval
    return float(2 * stats.t.sf(abs(math.log(lone) - center) / scale, len(group) - 1)), interval


def lone_process_verdict(values_a: list[float], values_b: list[float], min_effect: float = MIN_EFFECT,
                         higher_is_better: bool = False) -> dict[str, Any]:
    """One process on one side, a group on the other: the lone process tested against the group's spread."""
    lone_is_b = len(values_b) == 1
    group, lone = (values_a, values_b[0]) if lone_is_b else (values_b, values_a[0])
    ratio = statistics.median(values_b) / statistics.median(values_a)
    p_value, (low, high) = prediction(group, lone)
    floor, source = effect_floor(group, group, min_effect)
    answer = two_gates(ratio, p_value, floor, source, higher_is_better, "inside the group's spread")
    ci_low, ci_high = (lone / high, lone / low) if lone_is_b else (low / lone, high / lone)
    return {"verdict": answer[0], "reason": f"1 process in {'B' if lone_is_b else 'A'}: {answer[1]}",
            "test": "t prediction (log)", "p_value": p_value, "ci_low": ci_low, "ci_high": ci_high,
            "min_effect": floor}


def paired_verdict(records_a: list[Mapping[str, Any]], records_b: list[Mapping[str, Any]],
                   min_effect: float) -> dict[str, Any] | None:
    """The two-gate verdict on tokens/s from blocks paired inside the processes both sides were arms of (paired.py),
    the minimum effect at least the spread of the per-process ratios; None without 2 such processes."""
    from sysprof.profiler_core.analysis.paired import paired_statistics

    found = paired_statistics(records_a, records_b, ALPHA)
    if found is None:
        return None
    floor, source = ((found["spread"], "spread of the per-process ratios") if found["spread"] > min_effect
                     else (min_effect, "--min-effect"))
    answer, reason = two_gates(found["ratio"], found["p_value"], floor, source, True, "not significant")
    apart = " (eager and compiled phases)" if found["phases_apart"] else ""
    rests_on = (f"; {found['paired_blocks']} blocks paired in {found['paired_processes']} shared processes{apart}, "
                f"detectable from {found['detectable_effect']:.1%}")
    return found | {"verdict": answer, "reason": reason + rests_on, "min_effect": floor}
