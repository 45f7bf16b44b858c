"""Figures measured outside the clean pass, put onto the per-rank rows: the session's NVML readings by GPU and each
rank's communication figures from its profiled pass. Apart from ranks.py, which builds and judges the rows: these
only carry readings over, keyed by rank, before the findings are said again (ranks.with_findings).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

GPU_READINGS = ("sm_clock_mhz", "power_w", "other_processes", "throttle_reasons")


def with_gpu_readings(ranks: dict[str, Any], per_gpu: Mapping[int, Mapping[str, Any]],
                      first: Mapping[str, int] | None) -> dict[str, Any]:
    """The session's NVML readings (by local GPU) on the rows of this node's ranks: median SM clock and power, the
    other processes on the rank's GPU, its throttle reasons (ranks.with_findings then names a shared GPU). The
    node's first rank is global rank `first["rank"]`, so its local GPU k ran global rank first + k."""
    base = first["rank"] if first else 0
    rows = [row | {key: (per_gpu.get(row["rank"] - base) or {}).get(key) for key in GPU_READINGS}
            for row in ranks["rows"]]
    return {**ranks, "rows": rows}


COMMUNICATION_FIELDS = ("comm_ms", "exposed_comm_ms", "overlap_pct", "comm_share_pct")


def with_communication(ranks: dict[str, Any], kernel_rows: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The profiled pass's communication figures (per rank, from its own report) on the rows of the clean pass."""
    by_rank = {row["rank"]: row for row in kernel_rows or []}
    rows = [row | {field: by_rank.get(row["rank"], {}).get(field) for field in COMMUNICATION_FIELDS}
            for row in ranks["rows"]]
    return {**ranks, "rows": rows}
