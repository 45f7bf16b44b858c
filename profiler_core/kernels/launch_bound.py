"""Launch-bound or GPU-bound, per phase: how the GPU spends the span of the kernels each phase range launched.

A phase's kernels are the ones attribution.py gives it: the main-thread range (`forward`, `backward`, `optimizer
step`, one per step) that holds the start of the kernel's launch call, whichever thread made the call. Per range,
the GPU span runs from its first kernel's start to its last kernel's end; the optimizer's kernels mostly run after
the host closed its range, so the span, not the range's wall time, is what the GPU had to fill. Inside the span:

- busy: the union of the kernels' intervals (kernels overlapping on several streams count once), so ≤ the span;
- each idle gap, judged by the kernel that ends it:
  host-wait   its launch call ended after the GPU ran out of work: the GPU waited for the host;
  kernel-wait shorter than KERNEL_WAIT_NS, the launch already queued: the GPU's own dispatch gap;
  other       longer, the launch already queued (stream waits, copies and memsets, which are not kernels).

busy + host-wait + kernel-wait + other = span, exactly in ns; the ranges of all steps add up. Launch figures come
from the calls that launched the phase's kernels (cudaLaunchKernel, cuLaunchKernel, cudaLaunchKernelExC, …; not
cudaGraphLaunch, whose one call stands for many kernels). launch_verdict.py turns the figures into a verdict.

Profilers lengthen every launch call (nsys: ~4-5 µs each on an H200), so a profiled phase reads more launch-bound
than the same phase in a clean run.
"""
from __future__ import annotations

import re
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd

from sysprof.models.phases import PHASE_OF_RANGE, PHASES
from sysprof.profiler_core.kernels.attribution import KernelAttribution
from sysprof.profiler_core.kernels.intervals import NO_RANGE, containing_range

# On the H200 fixture a kernel whose launch was already queued starts a median 0.99 µs after its predecessor ends,
# 88% of them within 2 µs (n = 7192): the GPU's own dispatch gap between back-to-back kernels. Longer queued gaps
# have another cause (a stream wait, a copy or memset), so they count as "other", not "kernel-wait".
KERNEL_WAIT_NS = 2_000
# Kernel-launching API calls, runtime and driver (names carry version suffixes: cudaLaunchKernel_v7000).
LAUNCH_CALL = re.compile(r"^cu(da)?Launch(Cooperative)?Kernel")


@dataclass(frozen=True)
class SpanSplit:
    """GPU span of kernels and where its time went, in ns (busy + the three idle kinds = span)."""

    span_ns: int = 0
    busy_ns: int = 0
    host_wait_ns: int = 0
    kernel_wait_ns: int = 0
    other_ns: int = 0

    def __add__(self, other: SpanSplit) -> SpanSplit:
        return SpanSplit(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other))))

    def percentages(self) -> dict[str, float | None]:
        parts = {"busy_pct": self.busy_ns, "host_wait_pct": self.host_wait_ns,
                 "kernel_wait_pct": self.kernel_wait_ns, "other_pct": self.other_ns}
        return {key: round(100.0 * ns / self.span_ns, 2) if self.span_ns else None for key, ns in parts.items()}


def split_span(starts: np.ndarray, ends: np.ndarray, api_ends: np.ndarray,
               kernel_wait_ns: int = KERNEL_WAIT_NS) -> SpanSplit:
    """Busy time and idle gaps by cause over the span of one range's kernels.

    api_ends: when each kernel's launch call returned (NO_RANGE if unknown: never host-wait).
    """
    if len(starts) == 0:
        return SpanSplit()
    order = np.argsort(starts, kind="stable")
    starts, ends, api_ends = starts[order], ends[order], api_ends[order]
    idle_from = np.maximum.accumulate(ends)[:-1]  # when the GPU ran out of the kernels started so far
    gaps = np.clip(starts[1:] - idle_from, 0, None)
    host = api_ends[1:] > idle_from
    short = ~host & (gaps < kernel_wait_ns)
    span = int(ends.max() - starts[0])
    return SpanSplit(span, span - int(gaps.sum()), int(gaps[host].sum()), int(gaps[short].sum()),
                     int(gaps[~host & ~short].sum()))


def launch_ranges(attribution: KernelAttribution) -> np.ndarray:
    """Per kernel, the row of the main thread's phase ranges that launched it (NO_RANGE if none)."""
    ranges = attribution.main_ranges
    phase_ranges = ranges[ranges["name"].isin(PHASE_OF_RANGE)]
    found = containing_range(attribution.kernels["api_start"].to_numpy(), phase_ranges["start"].to_numpy(),
                             phase_ranges["end"].to_numpy())
    rows = np.append(phase_ranges.index.to_numpy(), NO_RANGE)  # NO_RANGE (-1) picks the last entry
    return rows[found]


def launch_figures(attribution: KernelAttribution) -> dict[str, dict | None]:
    """Span split and launch-call figures for each phase (None for a phase with no kernels)."""
    kernels = attribution.kernels
    range_of_kernel = launch_ranges(attribution)
    figures: dict[str, dict | None] = {}
    for phase in PHASES:
        in_phase = (kernels["phase"] == phase).to_numpy() & (range_of_kernel != NO_RANGE)
        figures[phase] = phase_figures(kernels[in_phase], range_of_kernel[in_phase]) if in_phase.any() else None
    return figures


def phase_figures(kernels: pd.DataFrame, range_of_kernel: np.ndarray) -> dict:
    """One phase: its ranges' span splits added up, and its launch calls."""
    split = SpanSplit()
    for _, in_range in kernels.groupby(range_of_kernel, sort=False):
        split += split_span(in_range["start"].to_numpy(), in_range["end"].to_numpy(), in_range["api_end"].to_numpy())
    return {"ranges": int(len(np.unique(range_of_kernel))), **_ns_fields(split), **split.percentages(),
            "kernel_wait_below_us": KERNEL_WAIT_NS / 1e3, **launch_call_figures(kernels)}


def launch_call_figures(kernels: pd.DataFrame) -> dict:
    """Median launch-call time, share of kernels shorter than their own launch call, median host lead."""
    launched = kernels[_is_launch_call(kernels["launch_api"]) & (kernels["api_end"] != NO_RANGE)]
    call_ns = launched["api_end"] - launched["api_start"]
    lead_ns = launched["start"] - launched["api_end"]  # how far ahead of the GPU the host launched it
    return {
        "launch_calls": int(len(launched)),
        "median_launch_us": _median_us(call_ns),
        "shorter_than_launch_pct": round(100.0 * float((launched["duration"] < call_ns).mean()), 2)
        if len(launched) else None,
        "median_kernel_us": _median_us(launched["duration"]),
        "median_host_lead_us": _median_us(lead_ns),
    }


def _is_launch_call(api_names: pd.Series) -> pd.Series:
    names = api_names.astype("category")  # match each distinct name once, not every kernel's
    return names.isin([name for name in names.cat.categories if LAUNCH_CALL.match(str(name))])


def _ns_fields(split: SpanSplit) -> dict[str, int]:
    return {"span_ns": split.span_ns, "busy_ns": split.busy_ns, "host_wait_ns": split.host_wait_ns,
            "kernel_wait_ns": split.kernel_wait_ns, "other_ns": split.other_ns}


def _median_us(values_ns: pd.Series) -> float | None:
    return round(float(values_ns.median()) / 1e3, 2) if len(values_ns) else None
