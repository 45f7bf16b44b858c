"""Several ranks (--nproc): each rank's record, the per-rank table, stragglers and the victim pattern: pure
functions of the ranks' records (no torch, no files). Launch checks and rank failures: session/rank_checks.py.

Why per rank: with DDP every rank waits for the slowest in the gradient all-reduce, so one slow rank makes every
rank's step slow and a single step time hides which one it was. Measured on a 2×H200 host (small, bf16): with
rank 1's forward slowed, both steps went from 40.5 to 80 ms; rank 1's forward rose to 68.5 ms while rank 0's
backward rose to 62 ms, because rank 0 waited inside the all-reduce. The forward names the culprit, the backward the
victim.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from sysprof.models.phases import STEP, TIMED_PHASES
from sysprof.profiler_core.records import phases_of
from sysprof.profiler_core.stability import process_label

STRAGGLER_SCORE = 0.75  # fastest rank's median / this rank's: below it, the rank is flagged
PHASE_GAP = 1.25  # a phase this many times the other ranks' median is what moved


def rank_record(rank: int, summary: Mapping[str, Any], steps: Sequence[Mapping[str, Any]],
                device: str | None = None) -> dict[str, Any]:
    """What the per-rank table needs from one rank: its phase medians, step p90, peak memory, status."""
    phases = phases_of(summary)
    measured = sorted(s["wall_ms"] for s in steps if s.get("kind") == "measured")
    peaks = [b for b in (summary.get("peak_memory_bytes") or {}).values() if b is not None]
    error = summary.get("error") or {}
    return {"rank": rank, "status": summary.get("status"), "error": error.get("message"),
            "median_ms": {phase: phases[phase]["median_ms"] for phase in TIMED_PHASES if phase in phases},
            "step_p90_ms": _p90(measured), "peak_allocated_bytes": max(peaks, default=None),
            "tokens_per_s": summary.get("tokens_per_s"), "host": (summary.get("env") or {}).get("hostname"),
            "device": device}


def _p90(values: list[float]) -> float | None:
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def rank_table(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per rank with its straggler score (fastest rank's step median / this rank's), the slowest and fastest
    marked, and a flag below STRAGGLER_SCORE."""
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
        rows.append({**record, "straggler_score": score, "flagged": score is not None and score < STRAGGLER_SCORE,
                     "mark": mark})
    return rows


def findings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The pattern in words: which rank's forward (or optimizer) is slow, and which ranks wait for it in backward.

    A rank whose own compute is slow is the culprit; with DDP the others' backward grows by the time they spend in
    the all-reduce waiting for it, so their step is as slow as the culprit's and its score alone cannot name it.
    A phase that is merely slower (noise moves a phase by tens of percent on a busy host) names no one: the rank's
    step must be flagged too, or another rank's backward must show the wait."""
    culprits = [r for r in rows if (_stands_out(rows, r, "forward") or _stands_out(rows, r, "optimizer"))
                and (r["flagged"] or any(_backward_waits(v, r) for v in rows if v is not r))]
    if not culprits:
        flagged = [r["rank"] for r in rows if r["flagged"]]
        return ([f"rank {', '.join(map(str, flagged))}: step below {STRAGGLER_SCORE:.0%} of the fastest rank's"]
                if flagged else [])
    said = []
    for culprit in culprits:
        phase = "forward" if _stands_out(rows, culprit, "forward") else "optimizer"
        others = [r for r in rows if r is not culprit]
        said.append(f"rank {culprit['rank']} is the straggler: its {phase} takes {culprit['median_ms'][phase]:.2f} ms "
                    f"against {_median_of(others, phase):.2f} ms on the other ranks")
        victims = [r for r in others if _backward_waits(r, culprit)]
        if victims:
            waits = ", ".join(f"rank {v['rank']} ({v['median_ms']['backward']:.2f} ms)" for v in victims)
            said.append(f"victim waits in all-reduce: the backward of {waits} grows to cover it, against "
                        f"{culprit['median_ms']['backward']:.2f} ms on rank {culprit['rank']}{_cost(victims, culprit)}")
    return said


def _cost(victims: Sequence[Mapping[str, Any]], culprit: Mapping[str, Any]) -> str:
    """What the wait costs every step, so that a reader can tell a lasting straggler from a rank a busy host slowed
    by a few milliseconds in this run (seen on a shared 2×H200 host: 9–13 ms of a 60 ms step, 2 runs in 10)."""
    wait = statistics.median(v["median_ms"]["backward"] for v in victims) - culprit["median_ms"]["backward"]
    step = culprit["median_ms"].get(STEP)
    return f": about {wait:.1f} ms of each {step:.1f} ms step is waiting ({wait / step:.0%})" if step else ""


def _median_of(rows: Sequence[Mapping[str, Any]], phase: str) -> float:
    return statistics.median(r["median_ms"][phase] for r in rows if phase in r["median_ms"])


def _stands_out(rows: Sequence[Mapping[str, Any]], row: Mapping[str, Any], phase: str) -> bool:
    others = [r for r in rows if r is not row and phase in r["median_ms"]]
    if phase not in row["median_ms"] or not others:
        return False
    return row["median_ms"][phase] > PHASE_GAP * _median_of(others, phase)


def _backward_waits(victim: Mapping[str, Any], culprit: Mapping[str, Any]) -> bool:
    backward_v, backward_c = victim["median_ms"].get("backward"), culprit["median_ms"].get("backward")
    return backward_v is not None and backward_c is not None and backward_v > PHASE_GAP * backward_c


GPU_READINGS = ("sm_clock_mhz", "power_w", "other_processes", "throttle_reasons")


def with_gpu_readings(ranks: dict[str, Any], per_gpu: Mapping[int, Mapping[str, Any]],
                      first: Mapping[str, int] | None) -> dict[str, Any]:
    """The session's NVML readings (by local GPU) on the rows of this node's ranks: median SM clock and power, the
    other processes on the rank's GPU, its throttle reasons; and a finding for each rank whose GPU is shared. The
    node's first rank is global rank `first["rank"]`, so its local GPU k ran global rank first + k."""
    base = first["rank"] if first else 0
    rows = [row | {key: (per_gpu.get(row["rank"] - base) or {}).get(key) for key in GPU_READINGS}
            for row in ranks["rows"]]
    return {**ranks, "rows": rows, "findings": [*shared_gpu_findings(rows), *ranks.get("findings", [])]}


def shared_gpu_findings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A rank whose GPU another process shares, named with that process (NVML) and what its phases show against
    the other ranks': the cause the node states, whether or not the timings single the rank out."""
    said = []
    for row in rows:
        processes = row.get("other_processes") or []
        others = [r for r in rows if r is not row and r.get("status") == "ok"]
        if not processes or not others or row.get("status") != "ok":
            continue
        gpu = processes[0].get("gpu")
        said.append(f"rank {row['rank']} shares {'its GPU' if gpu is None else f'GPU {gpu}'} with "
                    f"{', '.join(process_label(p) for p in processes)}{_phases_against(row, others)}")
    return said


def _phases_against(row: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> str:
    """: its forward +2%, optimizer ×2.18 against the other ranks; rank 0 waits ~38.9 ms of each 362.7 ms step."""
    changes = []
    for phase in ("forward", "optimizer"):
        own = row["median_ms"].get(phase)
        timed = [r for r in others if r["median_ms"].get(phase)]  # forward-only modes have no optimizer
        theirs = _median_of(timed, phase) if own and timed else None
        if own and theirs:
            ratio = own / theirs
            changes.append(f"{phase} ×{ratio:.2f}" if ratio >= 1.5 else f"{phase} {ratio - 1:+.0%}")
    text = f": its {', '.join(changes)} against the other ranks'" if changes else ""
    waits = [(r["rank"], r["median_ms"]["backward"] - row["median_ms"]["backward"]) for r in others
             if r["median_ms"].get("backward") and row["median_ms"].get("backward")]
    step = row["median_ms"].get(STEP)
    waiting = [f"rank {rank} waits ~{ms:.1f} ms" for rank, ms in waits if ms > 0]
    if waiting and step:
        text += f"; {', '.join(waiting)} of each {step:.1f} ms step in backward"
    return text


def local_ranks(summary: Mapping[str, Any], nproc: int) -> list[tuple[int, int]]:
    """(global rank, local rank) of this node's ranks: the node's first rank's summary says where they start."""
    first = (summary.get("rank") or {}).get("rank", 0)
    return [(first + local, local) for local in range(nproc)]


COMMUNICATION_FIELDS = ("comm_ms", "exposed_comm_ms", "overlap_pct", "comm_share_pct")


def with_communication(ranks: dict[str, Any], kernel_rows: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The profiled pass's communication figures (per rank, from its own report) on the rows of the clean pass."""
    by_rank = {row["rank"]: row for row in kernel_rows or []}
    rows = [row | {field: by_rank.get(row["rank"], {}).get(field) for field in COMMUNICATION_FIELDS}
            for row in ranks["rows"]]
    return {**ranks, "rows": rows}


def all_ranks_throughput(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Tokens per second of the whole job: each rank's own rate added up (every rank steps in lockstep)."""
    rates = [rate for r in rows if (rate := r.get("tokens_per_s"))]
    return sum(rates) if rates and len(rates) == len(rows) else None
