"""Verdicts between configurations that were arms of the same processes (runner/arms.py): each process's blocks
paired, A's block beside B's.

Two arms of one process met the same node: a process that ran slow (a neighbour, a clock, a stall on a busy host)
slowed both, and the ratio B/A inside it cancels that. What is left to judge is how the ratio moves between blocks and
between processes. Per block b of process p, l = log(B's tokens/s ÷ A's): the blocks are replicates inside a
process, the processes replicates of the whole (a one-way random-effects layout). The mean log ratio is tested against
0 with Student's t, its standard error from the between-process mean square on P − 1 degrees of freedom; where that
mean square is not larger than the within-process one by Bancroft's preliminary F test (α = 0.25), the two are
pooled (P·n − 1 degrees of freedom), so a process effect the data cannot show does not cost the power of every
block. The verdict then passes the same two gates as any other (verdicts.py): significance, and an effect at least
the minimum (--min-effect, or the spread of the per-process ratios). benchmarks/studies/shared_arms.py is the A/A
check that says this stays honest.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.profiler_core.analysis.metrics import between_process_stats

POOLING_ALPHA = 0.25  # Bancroft's preliminary test: pool unless the process effect shows at this level
POWER = 0.8  # the smallest detectable effect is the one the design finds 80% of the time at α


def block_logs(records_a: Sequence[Mapping[str, Any]],
               records_b: Sequence[Mapping[str, Any]]) -> list[list[float]]:
    """Per process that both sides were arms of (the same shared window), log(B ÷ A) of each block both measured;
    processes in run order, blocks in their order."""
    a_by_process = {_process_key(r): r for r in records_a if _process_key(r) is not None}
    found = []
    for record_b in records_b:
        record_a = a_by_process.get(_process_key(record_b))
        if record_a is None:
            continue
        rates_a, rates_b = _block_rates(record_a), _block_rates(record_b)
        logs = [math.log(rates_b[b] / rates_a[b]) for b in sorted(rates_a.keys() & rates_b.keys())]
        if logs:
            found.append(logs)
    return found


def _process_key(record: Mapping[str, Any]) -> float | None:
    """The shared process a record was an arm of: its window's start, which every arm of it carries."""
    if record.get("status", "ok") != "ok" or not record.get("shared_process"):
        return None
    return (record.get("ran") or {}).get("start")


def _block_rates(record: Mapping[str, Any]) -> dict[int, float]:
    shared = record.get("shared_process") or {}
    pairs = zip(shared.get("measured_in_blocks") or [], shared.get("block_tokens_per_s") or [])
    return {block: rate for block, rate in pairs if rate}


def _phases(records: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str((r.get("shared_process") or {}).get("phase", "eager")) for r in records}


def pooled_error(logs: list[list[float]]) -> tuple[float, float, int, str]:
    """(mean log ratio, its standard error, degrees of freedom, which error): blocks per process made equal (the
    fewest any process has)."""
    from scipy import stats

    n = min(len(blocks) for blocks in logs)
    rows = [blocks[:n] for blocks in logs]
    count, processes = n * len(rows), len(rows)
    means = [statistics.fmean(row) for row in rows]
    grand = statistics.fmean(means)
    between = n * sum((m - grand) ** 2 for m in means)
    within = sum((value - m) ** 2 for row, m in zip(rows, means) for value in row)
    df_within = processes * (n - 1)
    if df_within and within > 0:
        f_ratio = (between / (processes - 1)) / (within / df_within)
        if f_ratio < stats.f.ppf(1 - POOLING_ALPHA, processes - 1, df_within):
            return grand, math.sqrt((between + within) / (count - 1) / count), count - 1, "pooled"
    return grand, math.sqrt(between / (processes - 1) / count), processes - 1, "between processes"


def paired_statistics(records_a: Sequence[Mapping[str, Any]], records_b: Sequence[Mapping[str, Any]],
                      alpha: float) -> dict[str, Any] | None:
    """The paired ratio B/A of tokens/s with its interval at alpha, two-sided p, the smallest effect the design
    detects (80% of the time at alpha), the spread of the per-process ratios, and what it rests on; None without 2
    processes both sides were arms of. The verdict's gates are verdicts.py's (paired_verdict)."""
    from scipy import stats

    found = block_logs(records_a, records_b)
    if len(found) < 2:
        return None
    logs = [row[:min(len(blocks) for blocks in found)] for row in found]  # as many blocks from every process
    mean, error, df, kind = pooled_error(logs)
    critical = float(stats.t.ppf(1 - alpha / 2, df))
    p_value = (None if mean == 0 else 0.0) if error == 0 else float(2 * stats.t.sf(abs(mean) / error, df))
    spread = between_process_stats([math.exp(statistics.fmean(row)) for row in logs])["robust_cv_pct"] or 0.0
    return {"ratio": math.exp(mean), "p_value": p_value, "test": f"paired blocks (t, {kind})",
            "ci_low": math.exp(mean - critical * error), "ci_high": math.exp(mean + critical * error),
            "detectable_effect": math.exp((critical + float(stats.t.ppf(POWER, df))) * error) - 1,
            "spread": spread / 100, "paired_processes": len(logs), "paired_blocks": sum(len(row) for row in logs),
            "phases_apart": _phases(records_a) != _phases(records_b)}
