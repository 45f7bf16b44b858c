"""The shape of the kernel analysis the tool writes and reads: kernels/analysis.json and `sysprof analyze --json` on
a profile, down to each phase's launch figures. A TypedDict like records.py's documents (mypy checks every key),
kept apart because only the kernel attribution and its readers deal in it, never a run's own summary.
"""
from __future__ import annotations

from typing import Any, TypedDict


class LaunchFigures(TypedDict):
    """phases.*.launch of a kernel analysis: the phase's GPU span split by cause, its launch calls, a verdict
    (profiler_core/kernels/launch_bound.py and launch_verdict.py say how each is measured)."""

    ranges: int
    span_ns: int  # busy_ns + host_wait_ns + kernel_wait_ns + other_ns
    busy_ns: int
    host_wait_ns: int
    kernel_wait_ns: int
    other_ns: int
    busy_pct: float | None  # each *_pct: of span_ns; together 100 ± rounding
    host_wait_pct: float | None
    kernel_wait_pct: float | None
    other_pct: float | None
    kernel_wait_below_us: float  # a queued gap shorter than this is kernel-wait, a longer one other
    launch_calls: int
    median_launch_us: float | None
    shorter_than_launch_pct: float | None  # kernels shorter than their own launch call
    median_kernel_us: float | None
    median_host_lead_us: float | None  # launch call's end to its kernel's start
    verdict: str  # launch_verdict.LAUNCH_BOUND | GPU_BOUND
    reason: str
    remedy: str


class KernelPhase(TypedDict, total=False):
    gpu_ns: int
    kernels: int
    by_class: dict[str, int]
    wall_ns: int
    busy_pct: float | None  # share of the phase's GPU span with a kernel running (≤ 100); None without one
    launch: LaunchFigures | None  # None for 'other' and for nsys stats CSVs
    gemm_fraction: float


class KernelAnalysis(TypedDict, total=False):
    """kernels/analysis.json and `sysprof analyze X --json` on a profile."""

    source: str
    source_kind: str
    kernels: list[dict[str, Any]]
    phases: dict[str, KernelPhase]  # models.phases.ATTRIBUTED_PHASES
    gemm_fraction: dict[str, float]
    notes: list[str]

