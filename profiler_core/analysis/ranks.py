"""Several ranks (--nproc): each rank's record, the per-rank table, stragglers and the victim pattern: pure
functions of the ranks' records (no torch, no files). Launch checks and rank failures: session/rank_checks.py;
the node's readings and the profiled pass's communication figures on the rows: rank_readings.py.

Why per rank: with DDP every rank waits for the slowest in the gradient all-reduce, so one slow rank makes every
rank's step slow and a single step time hides which one it was. Measured on a 2×H200 host (small, bf16): with
rank 1's forward slowed, both steps went from 40.5 to 80 ms; rank 1's forward rose to 68.5 ms while rank 0's
backward rose to 62 ms, because rank 0 waited inside the all-reduce. The forward names the culprit, the backward the
victim.
"""
from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.models.phases import DATA, STEP, TIMED_PHASES
from sysprof.profiler_core.analysis.stability import process_label
from sysprof.profiler_core.analysis.stragglers import evidence, measured_by_index, paired_tests, too_few_steps
from sysprof.profiler_core.base.records import clean_measured, phases_of

# Test and benchmark only: "RANK:MS" delays that rank's forward by about MS ms (runner/distributed.slow_forward); a
# rank it delays names it as its cause.
SLOW_RANK_ENV = "SYSPROF_TEST_SLOW_RANK"
STRAGGLER_SCORE = 0.75  # fastest rank's median / this rank's: below it, the rank is flagged
CLOCK_GAP = 0.95  # a rank's SM clock below this share of the other ranks' is a cause worth naming
CPU_WAIT_SHARE = 0.25  # a run-queue wait this share of the rank's excess names host load as a cause


def test_delay_ms(rank: int) -> float | None:
    """The test switch's delay for this rank's forward, if any (torchrun passes the environment to every rank)."""
    which, _, ms = os.environ.get(SLOW_RANK_ENV, "").partition(":")
    return float(ms) if which and int(which) == rank else None


def rank_record(rank: int, summary: Mapping[str, Any], steps: Sequence[Mapping[str, Any]],
                device: str | None = None) -> dict[str, Any]:
    """What the per-rank table needs from one rank: its phase medians, step p90, peak memory, status, the median
    wait of its main thread for a CPU; and its measured steps' phases for the per-step test (rank_table drops them)."""
    phases = phases_of(summary)
    measured = clean_measured(steps)
    peaks = [b for b in (summary.get("peak_memory_bytes") or {}).values() if b is not None]
    waits = [s["cpu_wait_ms"] for s in measured if s.get("cpu_wait_ms") is not None]
    error = summary.get("error") or {}
    return {"rank": rank, "status": summary.get("status"), "error": error.get("message"),
            "median_ms": {phase: phases[phase]["median_ms"] for phase in (DATA, *TIMED_PHASES) if phase in phases},
            "step_p90_ms": _p90(sorted(s["wall_ms"] for s in measured)),
            "peak_allocated_bytes": max(peaks, default=None),
            "tokens_per_s": summary.get("tokens_per_s"), "host": (summary.get("env") or {}).get("hostname"),
            "device": device, "cpu_wait_ms": statistics.median(waits) if waits else None,
            "test_delay_ms": test_delay_ms(rank),
            "steps": [{"kind": "measured", "index": s.get("index"), "wall_ms": s["wall_ms"],
                       "phases_ms": s.get("phases_ms") or {}} for s in measured]}


def _p90(values: list[float]) -> float | None:
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def rank_table(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per rank with its straggler score (fastest rank's step median / this rank's), the slowest and fastest
    marked, and a flag below STRAGGLER_SCORE (the records' steps are left out)."""
    steps = {r["rank"]: r["median_ms"].get(STEP) for r in records}
    timed = {rank: ms for rank, ms in steps.items() if ms}
    fastest = min(timed.values(), default=None)
    slowest_rank = max(timed, key=timed.__getitem__, default=None)
    fastest_rank = min(timed, key=timed.__getitem__, default=None)
    rows = []
    for record in sorted(records, key=lambda r: r["rank"]):
        ms = steps[record["rank"]]
        score = fastest / ms if fastest and ms else None
        mark = "slowest" if record["rank"] == slowest_rank and len(timed) > 1 else \
            "fastest" if record["rank"] == fastest_rank and len(timed) > 1 else ""
        rows.append({**{k: v for k, v in record.items() if k != "steps"}, "straggler_score": score,
                     "flagged": score is not None and score < STRAGGLER_SCORE, "mark": mark})
    return rows


def ranks_section(records: Sequence[Mapping[str, Any]], missing: Sequence[str] = ()) -> dict[str, Any]:
    """The rows, the per-step test of every rank that measured steps, and the findings from what is known so far
    (the session adds the node's readings and says them again: with_findings)."""
    rows = rank_table(records)
    tests = paired_tests({r["rank"]: measured_by_index(r.get("steps") or ()) for r in records if r.get("steps")})
    return {"rows": rows, "stragglers": tests, "missing": list(missing), "findings": findings(rows, tests, missing)}


def with_findings(ranks: dict[str, Any]) -> dict[str, Any]:
    """The findings again, once the rows carry the node's readings (other processes, clocks, exposed wait)."""
    return {**ranks, "findings": findings(ranks["rows"], ranks.get("stragglers") or [], ranks.get("missing") or [])}


def findings(rows: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]],
             missing: Sequence[str] = ()) -> list[str]:
    """The ranks' findings: the ranks the per-step test left out and why, each straggler with its cause, its cost
    and what the verdict rests on (stragglers.py), each rank slower without a cause the node shows (said, not named
    the straggler), then each other rank whose GPU another process shares.

    Why a cause is needed to name a straggler: on a shared node a rank can run 5–17% slower than the others for a
    whole launch with nothing on its GPU, no wait for a CPU and equal clocks, and the next launch moves the gap to
    another rank or away (2×H100 host, small and xl bf16, 5 of 10 plain launches: benchmarks/multi_gpu). One launch
    proves the gap, not that it lasts; the cause is what lasts."""
    said = list(missing)
    if note := too_few_steps(tests):
        said.append(note)
    slower = {t["rank"]: t for t in tests if t["straggler"]}
    named = set()
    for row in rows:
        if row["rank"] not in slower:
            continue
        others = [r for r in rows if r is not row and r.get("status") == "ok"]
        causes = _causes(row, others, slower[row["rank"]])
        said.append(_straggler(row, others, slower[row["rank"]], causes) if causes else
                    _unexplained(row, others, slower[row["rank"]]))
        named |= {row["rank"]} if causes else set()
    return [*said, *shared_gpu_findings(rows, skip=named)]


def _straggler(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]], test: Mapping[str, Any],
               causes: Sequence[str]) -> str:
    """rank 1 is the straggler: another process (pid 4242 (python3, 1.2 GiB)) shares GPU 1; its forward +47%,
    optimizer ×2.10 against the other ranks'; rank 0 waits ~43.0 ms of each step in backward (slower in …)."""
    text = f"rank {row['rank']} is the straggler: {'; '.join(causes)}"
    if changes := _phase_changes(row, others):
        text += f"; its {changes} against the other ranks'"
    waits = [f"rank {rank} waits ~{ms:.1f} ms" for rank, ms in test["others_wait_ms"].items() if ms > 0]
    if waits:
        text += f"; {', '.join(waits)} of each step in backward"
    return f"{text}{_exposed(row, others)} ({evidence(test)})"


def _unexplained(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]], test: Mapping[str, Any]) -> str:
    changes = _phase_changes(row, others)
    return (f"rank {row['rank']} ran slower in this launch ({evidence(test)}{f'; its {changes}' if changes else ''})"
            " but the node shows no cause (its GPU unshared, clocks alike, no wait for a CPU): such gaps move between "
            "launches on a shared node, so no straggler is named; run again to see whether it stays with this rank")


def _causes(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]], test: Mapping[str, Any]) -> list[str]:
    """What the node says slowed this rank: another process on its GPU, a CPU it waited for, its data loader (a traced
    loop), a lower clock."""
    causes = []
    if row.get("test_delay_ms"):
        causes.append(f"the test delay of {row['test_delay_ms']:g} ms in its forward (SYSPROF_TEST_SLOW_RANK)")
    if processes := row.get("other_processes"):
        gpu = processes[0].get("gpu")
        causes.append(f"{'another process' if len(processes) == 1 else 'other processes'} "
                      f"({', '.join(process_label(p) for p in processes)}) shares "
                      f"{'its GPU' if gpu is None else f'GPU {gpu}'}")
    own, theirs = row.get("cpu_wait_ms"), _median_field(others, "cpu_wait_ms")
    if own is not None and theirs is not None and own - theirs > 0 and \
            own - theirs >= CPU_WAIT_SHARE * (test["excess_ms"] or 0):
        causes.append(f"its main thread waited {own:.1f} ms per step for a CPU against {theirs:.1f} ms on the other "
                      "ranks (host load)")
    own, theirs = row["median_ms"].get(DATA), _median_field([o["median_ms"] for o in others], DATA)
    if own is not None and theirs is not None and own - theirs >= CPU_WAIT_SHARE * (test["excess_ms"] or 0) > 0:
        causes.append(f"it waited {own:.1f} ms per step for its next batch against {theirs:.1f} ms on the other ranks "
                      "(its data loader)")
    clock, their_clock = row.get("sm_clock_mhz"), _median_field(others, "sm_clock_mhz")
    if clock and their_clock and clock < CLOCK_GAP * their_clock:
        reasons = set(row.get("throttle_reasons") or ()) - {"idle"} - \
            {r for o in others for r in (o.get("throttle_reasons") or ())}
        causes.append(f"its SM clock {clock:.0f} MHz against {their_clock:.0f} MHz on the other ranks"
                      + (f" ({', '.join(sorted(reasons))})" if reasons else ""))
    return causes


def _median_field(rows: Sequence[Mapping[str, Any]], field: str) -> float | None:
    values = [r[field] for r in rows if r.get(field) is not None]
    return statistics.median(values) if values else None


def _exposed(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> str:
    """The profiled pass's direct measure of the wait, where nsys gave one per rank."""
    theirs = [(o["rank"], o["exposed_comm_ms"]) for o in others if o.get("exposed_comm_ms") is not None]
    if row.get("exposed_comm_ms") is None or not theirs:
        return ""
    listed = ", ".join(f"{ms:.1f} ms on rank {rank}" for rank, ms in theirs)
    return f"; nsys: exposed communication {listed} against {row['exposed_comm_ms']:.1f} ms on rank {row['rank']}"


def shared_gpu_findings(rows: Sequence[Mapping[str, Any]], skip: set[int] | None = None) -> list[str]:
    """A rank whose GPU another process shares, named with that process (NVML) and what its phases show against
    the other ranks': the cause the node states, whether or not the per-step test singles the rank out.
    skip: ranks already named as stragglers (their finding names the process)."""
    said = []
    for row in rows:
        processes = row.get("other_processes") or []
        others = [r for r in rows if r is not row and r.get("status") == "ok"]
        if not processes or not others or row.get("status") != "ok" or row["rank"] in (skip or ()):
            continue
        gpu = processes[0].get("gpu")
        changes = _phase_changes(row, others)
        against = f": its {changes} against the other ranks'" if changes else ""
        said.append(f"rank {row['rank']} shares {'its GPU' if gpu is None else f'GPU {gpu}'} with "
                    f"{', '.join(process_label(p) for p in processes)}{against}{_median_waits(row, others)}")
    return said


def _phase_changes(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> str:
    """forward +2%, optimizer ×2.18: the rank's phase medians against the other ranks' (the phases both have)."""
    changes = []
    for phase in ("forward", "optimizer"):
        own = row["median_ms"].get(phase)
        timed = [r["median_ms"][phase] for r in others if r["median_ms"].get(phase)]  # forward-only: no optimizer
        if own and timed:
            ratio = own / statistics.median(timed)
            changes.append(f"{phase} ×{ratio:.2f}" if ratio >= 1.5 else f"{phase} {ratio - 1:+.0%}")
    return ", ".join(changes)


def _median_waits(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> str:
    """; rank 0 waits ~38.9 ms of each 362.7 ms step in backward (from the phase medians)."""
    waits = [(r["rank"], r["median_ms"]["backward"] - row["median_ms"]["backward"]) for r in others
             if r["median_ms"].get("backward") and row["median_ms"].get("backward")]
    step = row["median_ms"].get(STEP)
    waiting = [f"rank {rank} waits ~{ms:.1f} ms" for rank, ms in waits if ms > 0]
    return f"; {', '.join(waiting)} of each {step:.1f} ms step in backward" if waiting and step else ""


def local_ranks(summary: Mapping[str, Any], nproc: int) -> list[tuple[int, int]]:
    """(global rank, local rank) of this node's ranks: the node's first rank's summary says where they start."""
    first = (summary.get("rank") or {}).get("rank", 0)
    return [(first + local, local) for local in range(nproc)]


def all_ranks_throughput(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Tokens per second of the whole job: each rank's own rate added up (every rank steps in lockstep)."""
    rates = [rate for r in rows if (rate := r.get("tokens_per_s"))]
    return sum(rates) if rates and len(rates) == len(rows) else None
