"""Compare two runs (or two groups of repeated processes) phase by phase, for throughput and for energy: one row per
figure with both medians, B/A and the verdict on it (verdicts.py), held back where the sides ran one after the other;
and the config fields in which the two differ.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from sysprof.models.phases import STEP, TIMED_PHASES
from sysprof.profiler_core.analysis.metrics import process_medians, process_throughputs, process_tokens_per_joule
from sysprof.profiler_core.analysis.ordering import drift, interleaved, process_windows
from sysprof.profiler_core.analysis.verdicts import (
    FASTER,
    MIN_EFFECT,
    MISSING,
    SLOWER,
    TOO_FEW_STEPS,
    lone_process_verdict,
    noise_threshold_ms,
    one_process_verdict,
    paired_verdict,
    verdict,
)
from sysprof.profiler_core.base.records import phases_of

NOT_INTERLEAVED = "not interleaved"  # a gap that passed both gates, between sides that ran one after the other
LARGE_SPEEDUP = 2.0  # from here an effect reads as a ratio: "2.4× faster", not "138% faster"
THROUGHPUT_ROW = "tokens/s"
ENERGY_ROW = "tokens/J"
# Config fields that change the passes after the clean one, or how many processes ran, not the steps measured.
PASS_FIELDS = ("profiler", "memory", "memory_max_entries", "nvtx_modules", "repeats")
# What users change to make the same step faster (and how long they measure it): compared without --force. A
# difference in anything else (model, dims, ctx, batch, mode, device, loss, optimizer, ranks) is another step.
INTENDED_FIELDS = ("dtype", "matmul_precision", "compile", "compile_mode", "attention", "optimizer_impl",
                   "optimizer_args", "parallel", "warmup", "steps", "seed")


def other_step_fields(differences: Mapping[str, Any]) -> list[str]:
    """The differing fields that make B another step than A (compare needs --force for those)."""
    return [field for field in differences if field not in INTENDED_FIELDS]


def _judge(stats_a: Mapping[str, Any], stats_b: Mapping[str, Any], values_a: list[float], values_b: list[float],
           min_effect: float, higher_is_better: bool) -> dict[str, Any]:
    if not values_a or not values_b:
        return {"verdict": MISSING, "reason": f"not measured in {'A' if not values_a else 'B'}"}
    if min(stats_a.get("n") or 0, stats_b.get("n") or 0) < 2:
        return {"verdict": TOO_FEW_STEPS, "reason": "fewer than 2 measured steps"}
    if len(values_a) == len(values_b) == 1:
        return one_process_verdict(stats_a, stats_b, min_effect, higher_is_better)
    if min(len(values_a), len(values_b)) == 1:
        return lone_process_verdict(values_a, values_b, min_effect, higher_is_better)
    return verdict(values_a, values_b, min_effect, higher_is_better)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def compare_values(name: str, stats_a: Mapping[str, Any], stats_b: Mapping[str, Any], values_a: list[float],
                   values_b: list[float], min_effect: float = MIN_EFFECT, unit: str = "ms") -> dict:
    """One row: medians, B/A and its interval, processes per side, the verdict and its reason.

    speedup_a_over_b is how many times faster B is: A/B for times, B/A for a rate (unit other than ms)."""
    is_time = unit == "ms"
    median_a, median_b = (statistics.median(v) if v else None for v in (values_a, values_b))
    ratio = median_b / median_a if median_a and median_b is not None else None
    speedup = None if not ratio else 1 / ratio if is_time else ratio
    row: dict[str, Any] = {
        "phase": name, "unit": unit, "a_median": median_a, "b_median": median_b,
        "a_median_ms": median_a if is_time else None, "b_median_ms": median_b if is_time else None,
        "ratio_b_over_a": _rounded(ratio), "speedup_a_over_b": _rounded(speedup), "n_a": len(values_a),
        "n_b": len(values_b), "ci_low": None, "ci_high": None, "p_value": None, "test": None, "min_effect": min_effect,
        "noise_ms": round(noise_threshold_ms(stats_a, stats_b), 4) if is_time else None}
    row.update(_judge(stats_a, stats_b, values_a, values_b, min_effect, higher_is_better=not is_time))
    for key in ("ci_low", "ci_high", "min_effect"):
        row[key] = _rounded(row[key])
    row["verdict_text"] = verdict_text(row)
    return row


def verdict_text(row: Mapping[str, Any]) -> str:
    """The verdict as reports word it: "14% faster" when B does 1.14× the work per second (times: A/B = 1.14;
    tokens/s: B/A = 1.14), "2.4× faster" from LARGE_SPEEDUP on, only for a verdict that passed both gates; every
    other verdict as it is."""
    speedup = row.get("speedup_a_over_b")
    if row["verdict"] not in (FASTER, SLOWER) or not speedup:
        return row["verdict"]
    if max(speedup, 1 / speedup) >= LARGE_SPEEDUP:
        return f"{speedup:.1f}× faster" if speedup > 1 else f"{1 / speedup:.1f}× slower"
    return f"{abs(speedup - 1):.0%} {'faster' if speedup > 1 else 'slower'}"


def _energy_rows(summary_a: Mapping[str, Any], summary_b: Mapping[str, Any], min_effect: float) -> list[dict]:
    """tokens per joule, judged as tokens/s is on its per-process values, where both sides read the GPU's energy:
    "more per joule" where B does more work for the same energy."""
    values_a, values_b = process_tokens_per_joule(summary_a), process_tokens_per_joule(summary_b)
    if not values_a or not values_b:
        return []
    row = compare_values(ENERGY_ROW, _throughput_stats(summary_a, values_a), _throughput_stats(summary_b, values_b),
                         values_a, values_b, min_effect, ENERGY_ROW)
    words = {"faster": "more per joule", "slower": "less per joule"}
    row["verdict_text"] = " ".join(words.get(word, word) for word in row["verdict_text"].split(" "))
    return [row]


def _throughput_stats(summary: Mapping[str, Any], throughputs: list[float]) -> dict[str, Any]:
    """A rate (tokens/s, tokens/J) in PhaseStats' shape for the one-process rule: the step's relative spread
    carried over."""
    step = phases_of(summary).get(STEP) or {}
    rate = statistics.median(throughputs) if throughputs else None
    relative = (step.get("std_ms") or 0.0) / step["median_ms"] if step.get("median_ms") else 0.0
    return {"median_ms": rate, "std_ms": None if rate is None else rate * relative, "n": step.get("n") or 0}


def _paired(row: dict, summary_a: Mapping[str, Any], summary_b: Mapping[str, Any], min_effect: float) -> dict:
    """A tokens/s row between arms of the same shared processes: the verdict on their blocks paired inside each
    process takes the place of the one on per-process values, which a slow process would blur."""
    found = paired_verdict(_processes(summary_a), _processes(summary_b), min_effect)
    if found is None:
        return row
    row.update({key: found[key] for key in ("verdict", "reason", "test", "p_value", "detectable_effect")})
    row.update({key: _rounded(found[key]) for key in ("ci_low", "ci_high", "min_effect")})
    row["ratio_b_over_a"] = row["speedup_a_over_b"] = _rounded(found["ratio"])
    row["verdict_text"] = verdict_text(row)
    return row


def _processes(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((summary.get("repeats") or {}).get("processes") or [summary])


def compare_summaries(summary_a: Mapping[str, Any], summary_b: Mapping[str, Any],
                      min_effect: float = MIN_EFFECT) -> list[dict]:
    """One row per phase present in both (the step row after the phases), then tokens/s when both carry it.

    A summary: a RunSummary, a group summary (metrics.aggregate_processes) or any summary read from disk."""
    phases_a, phases_b = phases_of(summary_a), phases_of(summary_b)
    # a traced loop's own phases (data, say) first, then the built-in ones and the step
    named = [phase for phase in phases_a if phase not in TIMED_PHASES] + list(TIMED_PHASES)
    rows = [compare_values(phase, phases_a[phase], phases_b[phase], process_medians(summary_a, phase),
                           process_medians(summary_b, phase), min_effect)
            for phase in named if phase in phases_a and phase in phases_b]
    rates_a, rates_b = process_throughputs(summary_a), process_throughputs(summary_b)
    if rates_a and rates_b:
        row = compare_values(THROUGHPUT_ROW, _throughput_stats(summary_a, rates_a),
                             _throughput_stats(summary_b, rates_b), rates_a, rates_b, min_effect, "tokens/s")
        rows.append(_paired(row, summary_a, summary_b, min_effect))
    rows += _energy_rows(summary_a, summary_b, min_effect)
    together = interleaved(process_windows(summary_a), process_windows(summary_b))
    return [_with_ordering(row, together) for row in rows]


def _with_ordering(row: dict, together: bool | None) -> dict:
    """A gap between sides that ran one after the other is the config's or the node's: no verdict says which."""
    row["interleaved"] = together
    if together is False and row["verdict"] in (FASTER, SLOWER):
        row["reason"] = (f"B {row['verdict_text']}, but A and B ran one after the other: the node may have changed "
                         "between them (sysprof ab interleaves them)")
        row["verdict"] = row["verdict_text"] = NOT_INTERLEAVED
    return row


def ordering(summary_a: Mapping[str, Any], summary_b: Mapping[str, Any], phase: str = STEP) -> dict[str, Any]:
    """Whether the sides interleaved in time, and a drift of either side's per-process medians of phase."""
    windows = {side: process_windows(summary) for side, summary in (("a", summary_a), ("b", summary_b))}
    return {"interleaved": interleaved(windows["a"], windows["b"]),
            "drift": {side: drift(process_medians(summary, phase), windows[side])
                      for side, summary in (("a", summary_a), ("b", summary_b))}}


def ordering_notes(found: Mapping[str, Any], phase: str = STEP) -> list[str]:
    """What the output says of when the processes ran (nothing when they interleaved and none drifted)."""
    notes = []
    if found["interleaved"] is False:
        notes.append("note: A and B ran one after the other, not interleaved: a change in the node between them "
                     "reads as a change in the config; `sysprof ab` runs them interleaved")
    elif found["interleaved"] is None:
        notes.append("note: when each process ran is not recorded (runs saved before it was), so whether A and B "
                     "interleaved is unknown")
    for side, trend in found["drift"].items():
        if trend:
            change = "" if trend["change_pct"] is None else f"{trend['change_pct']:+.1f}% first to last, "
            notes.append(f"note: {side.upper()} drifts: its {phase} medians {'rise' if trend['tau'] > 0 else 'fall'} "
                         f"over its processes in run order ({change}Kendall τ {trend['tau']:.2f}, "
                         f"p={trend['p_value']:.2g})")
    return notes


def differences_text(differences: Mapping[str, tuple[Any, Any]], fields: Any = None) -> str:
    """"ctx 32 ≠ 64, model_args n_layer=4 ≠ n_layer=8": a list reads as its items, not as Python writes it."""
    def shown(value: Any) -> str:
        return ",".join(map(str, value)) or "none" if isinstance(value, (list, tuple)) else str(value)

    return ", ".join(f"{field} {shown(differences[field][0])} ≠ {shown(differences[field][1])}"
                     for field in (differences if fields is None else fields))


def config_differences(config_a: Mapping[str, Any], config_b: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Config fields whose values differ (A's, B's), leaving out those that only shape the extra passes."""
    fields = [f for f in {**config_a, **config_b} if f not in PASS_FIELDS]
    return {f: (config_a.get(f), config_b.get(f)) for f in fields if config_a.get(f) != config_b.get(f)}
