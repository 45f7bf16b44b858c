"""Timing a training loop's phases without ever waiting for the GPU.

On CUDA each boundary (a step's or a phase's start and end) records an event on the current stream; the times are
read only once the step's last event has completed (`query()`, which never blocks), a step or more later. The time
between two events is GPU time: for the data phase it is how long the GPU sat waiting for the batch, zero when it
had queued work. The host's own clock is kept beside it (what the Python side spent). On a CPU the host clock is
the only clock. Events are reused from a pool: a loop of a million steps allocates a handful.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Mark:
    """One boundary: the host clock, and on CUDA the event recorded there."""
    host_s: float
    event: Any = None


@dataclass
class StepMarks:
    """A step's boundaries as they were recorded, to be read once its last event has completed."""
    index: int
    start: Mark
    phases: list[tuple[str, Mark, Mark]] = field(default_factory=list)
    end: Mark | None = None
    loss: Any = None  # a pinned host copy (CUDA) or a float, read once the step is done
    tokens: int | None = None
    peaks: dict[str, int] = field(default_factory=dict)
    recorded_by: str | None = None  # the pass of a step a slowing capture records (step_windows.py)


class HostClock:
    """The CPU's clock: every step is done as soon as it ends."""

    cuda = False

    def mark(self) -> Mark:
        return Mark(time.perf_counter())

    def done(self, marks: StepMarks) -> bool:
        return True

    def elapsed_ms(self, start: Mark, end: Mark) -> float:
        return (end.host_s - start.host_s) * 1e3

    def release(self, marks: StepMarks) -> None:
        pass

    def wait(self) -> None:
        pass


class CudaClock(HostClock):
    """CUDA events on the current stream, from a pool; no call here waits for the GPU but wait()."""

    cuda = True

    def __init__(self, torch_module: Any):
        self.torch = torch_module
        self.pool: list[Any] = []

    def mark(self) -> Mark:
        event = self.pool.pop() if self.pool else self.torch.cuda.Event(enable_timing=True)
        event.record()
        return Mark(time.perf_counter(), event)

    def done(self, marks: StepMarks) -> bool:
        return marks.end is not None and marks.end.event.query()

    def elapsed_ms(self, start: Mark, end: Mark) -> float:
        return float(start.event.elapsed_time(end.event))

    def release(self, marks: StepMarks) -> None:
        """The step's events back to the pool, once their times are read."""
        for mark in _marks_of(marks):
            self.pool.append(mark.event)

    def wait(self) -> None:
        """The one wait: when the loop is over, for the steps still in flight."""
        self.torch.cuda.synchronize()


def _marks_of(marks: StepMarks) -> list[Mark]:
    found = [marks.start, *(m for _, start, end in marks.phases for m in (start, end))]
    return found + ([marks.end] if marks.end is not None else [])


def clock_for(torch: Any, device: str | None) -> HostClock:
    """CUDA events when asked, or when the script has used CUDA by its first step; else the host's clock (a CPU
    loop on a GPU node must not be timed on an idle GPU)."""
    cuda = device == "cuda" or (device is None and torch is not None and torch.cuda.is_initialized())
    return CudaClock(torch) if cuda else HostClock()
