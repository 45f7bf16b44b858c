"""The steps a traced loop hands to the profiler that wraps it (`sysprof trace --profile-steps 200-220`): nsys,
started with a cudaProfilerApi capture range, records from cudaProfilerStart to cudaProfilerStop, so the tracker
starts the capture as the first chosen step starts and stops it as the last one ends.

The GPU is waited for at both edges (two waits in the whole job): the capture then holds the chosen steps' kernels
and none of the step before, and the last step's kernels have run before the capture stops. Which steps were
captured is said in the run, and why none were when the job ended first or ran on the CPU."""
from __future__ import annotations

import os
import sys
from typing import Any

PROFILE_ENV = "SYSPROF_TRACE_PROFILE"  # "FIRST-LAST": set by `sysprof trace --profile-steps` for the launched job


def parse_steps(text: str) -> tuple[int, int]:
    """'200-220' → (200, 220); '7' → (7, 7). ValueError with the reason."""
    first, separator, last = text.strip().partition("-")
    try:
        window = (int(first), int(last) if separator else int(first))
    except ValueError:
        raise ValueError(f"{text!r}: expected FIRST-LAST step numbers, e.g. 200-220") from None
    if window[0] < 0 or window[1] < window[0]:
        raise ValueError(f"{text!r}: expected 0 <= FIRST <= LAST")
    return window


class ProfileWindow:
    def __init__(self, torch: Any, first: int, last: int):
        self.torch, self.first, self.last = torch, first, last
        self.started: int | None = None  # the step the capture started at
        self.stopped: int | None = None  # the step it stopped after
        self.on_cpu = False

    def step_starts(self, index: int, cuda: bool) -> None:
        if index != self.first or self.started is not None:
            return
        if not cuda:  # nothing for nsys's CUDA trace to capture
            self.on_cpu = True
            return
        self.torch.cuda.synchronize()
        self.torch.cuda.cudart().cudaProfilerStart()
        self.started = index

    def step_ends(self, index: int) -> None:
        if self.started is not None and self.stopped is None and index == self.last:
            self._stop(index)

    def _stop(self, index: int) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.cudart().cudaProfilerStop()
        self.stopped = index

    def close(self, steps_done: int) -> dict[str, str]:
        """At the job's end: the capture stopped if still open; the finding that says which steps it holds."""
        if self.started is not None and self.stopped is None:
            self._stop(steps_done - 1)
        return {"kind": "profiled steps", "text": self._text(steps_done),
                "rests_on": "cudaProfilerStart/Stop around the chosen steps, under nsys's cudaProfilerApi range"}

    def captured(self) -> list[int] | None:
        """[first, last] of the steps the capture holds (once closed), None when it holds none."""
        return None if self.started is None or self.stopped is None else [self.started, self.stopped]

    def _text(self, steps_done: int) -> str:
        asked = f"steps {self.first}-{self.last}" if self.last > self.first else f"step {self.first}"
        if self.on_cpu:
            return f"{asked} not profiled: the loop ran on the CPU, and nsys captures CUDA work"
        if self.started is None:
            return f"{asked} not profiled: the job ended after {steps_done} step{'s' * (steps_done != 1)}"
        assert self.stopped is not None
        if self.stopped < self.last:
            return f"steps {self.started}-{self.stopped} profiled of the {asked} asked: the job ended first"
        return f"{asked} profiled"


def window_from_environment(torch: Any) -> ProfileWindow | None:
    """The window the launching `sysprof trace` asked for, if any (a malformed one is said and ignored)."""
    text = os.environ.get(PROFILE_ENV)
    if not text:
        return None
    try:
        first, last = parse_steps(text)
    except ValueError as exc:
        print(f"sysprof trace: ${PROFILE_ENV} {exc}; no steps profiled", file=sys.stderr)
        return None
    return ProfileWindow(torch, first, last)
