"""Which rank is the straggler, decided step by step: pure functions of the ranks' measured steps (no torch, no files).

Why per step and not by a ratio of medians: on a shared node a neighbour job, host load or a lower clock slows one
rank in most steps, while noise moves any rank in a few; a ratio of medians cannot tell a lasting 8% from one bad
stretch, and a fixed phase ratio misses a wait that is 22% of a long backward (a neighbour on one GPU once took
the step from 215 to 302 ms and no finding named it).

With DDP every rank waits for the slowest in the gradient all-reduce, so the wait lands in the others' backward.
A rank's own time in a step is therefore every phase but its backward (forward and optimizer; in a traced loop also
its wait for data) plus the backward less the wait it shows; the wait is taken as its backward less the shortest
backward of that step (the last rank to arrive waits least).
A rank is the straggler when its own compute is longer than the other ranks' (their median) in a clear majority
of the steps (a one-sided sign test) by at least MIN_SHARE of the step. FSDP also waits in the forward's
all-gathers, where a slow rank's forward and its victims' look alike: there the test can only miss, not misname.
So does DDP's second iteration, whose forward broadcasts the rebuilt gradient buckets: the default warmup (5) keeps
it out of the measured steps; with --warmup 1 the first measured step's wait is in the forward.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from sysprof.profiler_core.base.records import clean_measured

ALPHA = 0.05  # sign test: 9 of 10 steps slower passes (p 0.011), 8 of 10 does not (p 0.055)
MIN_SHARE = 0.05  # the rank's excess own compute, as a share of the step: below it, not worth a finding
MIN_STEPS = 5  # below this many paired steps even all of them slower is no proof at ALPHA


def measured_by_index(steps: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """A rank's measured steps by their index (warmup and other passes' steps left out)."""
    return {int(s["index"]): s for s in clean_measured(steps) if "index" in s}


def _phase(step: Mapping[str, Any], name: str) -> float:
    return float((step.get("phases_ms") or {}).get(name) or 0.0)


def own_and_wait(steps: Mapping[int, Mapping[int, Mapping[str, Any]]]) -> tuple[dict[int, list[float]],
                                                                               dict[int, list[float]], list[float]]:
    """Per rank, over the steps every rank measured (same order): own compute, backward wait, and the steps' wall
    (the slowest rank's: the job's step)."""
    common = sorted(set.intersection(*(set(by_index) for by_index in steps.values()))) if steps else []
    own: dict[int, list[float]] = {rank: [] for rank in steps}
    wait: dict[int, list[float]] = {rank: [] for rank in steps}
    walls = []
    for index in common:
        floor = min(_phase(by_index[index], "backward") for by_index in steps.values())
        for rank, by_index in steps.items():
            step = by_index[index]
            own[rank].append(sum(float(ms or 0.0) for ms in (step.get("phases_ms") or {}).values())
                             - _phase(step, "backward") + floor)
            wait[rank].append(_phase(step, "backward") - floor)
        walls.append(max(float(by_index[index].get("wall_ms") or 0.0) for by_index in steps.values()))
    return own, wait, walls


def paired_tests(steps: Mapping[int, Mapping[int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One result per rank: in how many steps its own compute exceeded the other ranks' median, the sign test's p,
    the median excess (ms and share of the step), and each other rank's median wait per step in backward."""
    if len(steps) < 2:
        return []
    from scipy.stats import binomtest  # here: the CLI's startup imports this module, not scipy (startup benchmark)

    own, wait, walls = own_and_wait(steps)
    step_ms = statistics.median(walls) if walls else None
    results = []
    for rank in sorted(steps):
        others = [r for r in steps if r != rank]
        excess = [own[rank][i] - statistics.median(own[r][i] for r in others) for i in range(len(walls))]
        slower, nonzero = sum(d > 0 for d in excess), sum(d != 0 for d in excess)
        p = float(binomtest(slower, nonzero, 0.5, alternative="greater").pvalue) if nonzero else 1.0
        excess_ms = statistics.median(excess) if excess else None
        share = excess_ms / step_ms if excess_ms is not None and step_ms else None
        waits = {r: statistics.median(w - v for w, v in zip(wait[r], wait[rank], strict=True))
                 for r in others} if walls else {}
        results.append({"rank": rank, "steps": len(walls), "slower_steps": slower, "p_value": p,
                        "excess_ms": excess_ms, "share": share, "step_ms": step_ms, "others_wait_ms": waits,
                        "straggler": bool(len(walls) >= MIN_STEPS and p < ALPHA and share is not None
                                          and share >= MIN_SHARE)})
    return results


def evidence(test: Mapping[str, Any]) -> str:
    """What the verdict rests on: slower in 10 of 10 steps by 41.8 ms (14% of the 302.0 ms step), sign test p 0.001."""
    return (f"slower in {test['slower_steps']} of {test['steps']} steps by {test['excess_ms']:.1f} ms "
            f"({test['share']:.0%} of the {test['step_ms']:.1f} ms step), sign test p {test['p_value']:.3f}")


def too_few_steps(tests: Iterable[Mapping[str, Any]]) -> str | None:
    """The note for a run too short for the test (its steps say nothing either way)."""
    counts = {t["steps"] for t in tests}
    if counts and max(counts) < MIN_STEPS:
        return (f"straggler test not run: {max(counts)} step(s) measured on every rank; it needs {MIN_STEPS} "
                "(--steps)")
    return None
