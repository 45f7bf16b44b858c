"""Communication kernels of one GPU (one rank's report): their time, how much of it no compute kernel hides, overlap.

Exposed communication is the time a communication kernel runs while no compute kernel runs on the same GPU: what
the step would lose if the collective could not be hidden at all is the whole communication time; what it does
lose is at least the exposed part. Both come from the union of intervals (several NCCL channels or streams may run
at once, and one compute kernel may cover several collectives), never from sums that would count a moment twice.
"""
from __future__ import annotations

import numpy as np

from sysprof.profiler_core.kernels.attribution import KernelAttribution
from sysprof.profiler_core.kernels.intervals import NO_RANGE

COMMUNICATION_CLASS = "nccl"  # classify.py: every kernel named nccl*, ncclDevKernel_* included


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as sorted, disjoint intervals."""
    if len(starts) == 0:
        return starts.astype(np.int64), ends.astype(np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    # A new interval begins where a start lies past everything before it.
    begins = np.concatenate(([True], starts[1:] > ends[:-1]))
    return starts[begins], np.maximum.reduceat(ends, np.flatnonzero(begins))


def covered_ns(starts: np.ndarray, ends: np.ndarray, by_starts: np.ndarray, by_ends: np.ndarray) -> int:
    """How much of the disjoint intervals [starts, ends) the disjoint, sorted intervals `by` cover."""
    if len(starts) == 0 or len(by_starts) == 0:
        return 0
    before = np.concatenate(([0], np.cumsum(by_ends - by_starts)))

    def covered_until(times: np.ndarray) -> np.ndarray:
        index = np.searchsorted(by_starts, times, side="right") - 1
        safe = np.clip(index, 0, None)
        inside = np.clip(times - by_starts[safe], 0, (by_ends - by_starts)[safe])
        return np.where(index >= 0, before[safe] + inside, 0)

    return int((covered_until(ends) - covered_until(starts)).sum())


def communication_summary(attribution: KernelAttribution) -> dict:
    """kernel_ns (sum of communication kernel durations), union_ns, exposed_ns, overlap_pct, share_pct of all
    kernel time, per-step milliseconds over the measured steps; kernels 0 when there was no communication."""
    kernels = attribution.kernels
    is_comm = (kernels["class"] == COMMUNICATION_CLASS).to_numpy()
    starts, ends = kernels["start"].to_numpy(), kernels["end"].to_numpy()
    comm_starts, comm_ends = merged(starts[is_comm], ends[is_comm])
    compute_starts, compute_ends = merged(starts[~is_comm], ends[~is_comm])
    union_ns = int((comm_ends - comm_starts).sum())
    exposed_ns = union_ns - covered_ns(comm_starts, comm_ends, compute_starts, compute_ends)
    kernel_ns, all_ns = int(kernels["duration"][is_comm].sum()), int(kernels["duration"].sum())
    steps = max(int(kernels.loc[kernels["step"] != NO_RANGE, "step"].nunique()), 1)
    return {
        "kernels": int(is_comm.sum()), "kernel_ns": kernel_ns, "union_ns": union_ns, "exposed_ns": exposed_ns,
        "overlap_pct": 100.0 * (1 - exposed_ns / union_ns) if union_ns else None,
        "share_pct": 100.0 * kernel_ns / all_ns if all_ns else None, "steps": steps,
        "per_step_ms": {"kernel": kernel_ns / steps / 1e6, "exposed": exposed_ns / steps / 1e6},
    }
