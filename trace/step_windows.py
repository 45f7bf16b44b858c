"""Steps of a traced loop recorded by something that slows the steps it records, so only the steps the user chose:

- `sysprof trace --profile-steps 200-220`: nsys, started with a cudaProfilerApi capture range, records from
  cudaProfilerStart to cudaProfilerStop. The GPU is waited for at both edges (two waits in the whole job): the
  capture then holds the chosen steps' kernels and none of the step before, and the last step's kernels have run
  before it stops.
- `sysprof trace --memory-steps 300-302`: the CUDA allocator's history with Python stacks, dumped as the last chosen
  step ends into the run's memory/ folder, as a `sysprof run`'s memory pass writes it. Those steps are marked with
  the pass (`"pass": "memory"`) and left out of the loop's statistics: recording slows them.

Which steps each window holds is said in the run, and why none were when the job ended first or ran on the CPU."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir

PROFILE_ENV = "SYSPROF_TRACE_PROFILE"  # "FIRST-LAST": set by `sysprof trace --profile-steps` for the launched job
MEMORY_ENV = "SYSPROF_TRACE_MEMORY"  # "FIRST-LAST": set by `sysprof trace --memory-steps`
MEMORY_MAX_ENTRIES = 200_000  # allocator events kept, as a `sysprof run`'s memory pass keeps by default


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


class NsysCapture:
    """nsys's capture range, opened and closed from inside the job."""
    key, done, pass_name = "profiled_steps", "profiled", None  # steps under nsys's range run as fast as others
    needs = "nsys captures CUDA work"
    rests_on = "cudaProfilerStart/Stop around the chosen steps, under nsys's cudaProfilerApi range"

    def __init__(self, torch: Any):
        self.torch = torch

    def start(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.cudart().cudaProfilerStart()

    def stop(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.cudart().cudaProfilerStop()


class MemoryCapture:
    """The allocator's history, written where a `sysprof run` writes its memory pass's snapshot."""
    key, done, pass_name = "memory_steps", "memory-recorded", "memory"
    needs = "the allocator history is CUDA's"
    rests_on = "torch.cuda.memory._record_memory_history over the chosen steps, dumped as the last one ended"

    def __init__(self, torch: Any, run_dir: Path):
        self.torch, self.path = torch, run_dir / rundir.MEMORY_DIR / rundir.MEMORY_SNAPSHOT

    def start(self) -> None:
        self.torch.cuda.memory._record_memory_history(max_entries=MEMORY_MAX_ENTRIES, stacks="python")

    def stop(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.torch.cuda.memory._dump_snapshot(str(self.path))
        finally:  # a snapshot that cannot be written must not leave the rest of the job recorded (and slowed)
            self.torch.cuda.memory._record_memory_history(enabled=None)


class StepWindow:
    """Steps FIRST to LAST handed to a capture: started as FIRST starts, stopped as LAST ends (or the job ends)."""

    def __init__(self, capture: Any, first: int, last: int):
        self.capture, self.first, self.last = capture, first, last
        self.started: int | None = None  # the step the capture started at
        self.stopped: int | None = None  # the step it stopped after
        self.on_cpu = False
        self.failed: str | None = None  # why the capture could not start or be written: the job goes on

    def step_starts(self, index: int, cuda: bool) -> None:
        if index != self.first or self.started is not None:
            return
        if not cuda:  # nothing CUDA for it to record
            self.on_cpu = True
            return
        if self._safely(self.capture.start):
            self.started = index

    def recording(self) -> bool:
        return self.started is not None and self.stopped is None

    def step_ends(self, index: int) -> None:
        if self.recording() and index == self.last:
            self._stop(index)

    def _stop(self, index: int) -> None:
        self.stopped = index
        if not self._safely(self.capture.stop):
            self.started = self.stopped = None

    def _safely(self, action) -> bool:
        """The user's job never fails because of a capture: its error is kept for the run's finding."""
        try:
            action()
        except Exception as exc:  # a full disk, a torch without the call: said in the run, not raised in the loop
            self.failed = f"{type(exc).__name__}: {exc}".splitlines()[0]
            return False
        return True

    def close(self, steps_done: int, last_begun: int | None = None) -> dict[str, str]:
        """At the job's end: the capture stopped if still open (it holds the steps up to last_begun, a step that
        raised among them); the finding that says which steps it holds."""
        if self.recording():
            assert self.started is not None
            self._stop(max(steps_done - 1 if last_begun is None else last_begun, self.started))
        return {"kind": self.capture.key.replace("_", " "), "text": self._text(steps_done),
                "rests_on": self.capture.rests_on}

    def captured(self) -> list[int] | None:
        """[first, last] of the steps the capture holds (once closed), None when it holds none."""
        return None if self.started is None or self.stopped is None else [self.started, self.stopped]

    def _text(self, steps_done: int) -> str:
        asked = _steps(self.first, self.last)
        done = self.capture.done
        if self.failed:
            return f"{asked} not {done}: {self.failed}"
        if self.on_cpu:
            return f"{asked} not {done}: the loop ran on the CPU, and {self.capture.needs}"
        if self.started is None:
            return f"{asked} not {done}: the job ended after {steps_done} step{'s' * (steps_done != 1)}"
        assert self.stopped is not None
        if self.stopped < self.last:
            return f"{_steps(self.started, self.stopped)} {done} of the {asked} asked: the job ended first"
        return f"{asked} {done}"


def _steps(first: int, last: int) -> str:
    return f"steps {first}-{last}" if last > first else f"step {first}"


def windows_from_environment(torch: Any, run_dir: Path) -> list[StepWindow]:
    """The windows the launching `sysprof trace` asked for (a malformed one is said and ignored)."""
    windows = []
    for variable, capture in ((PROFILE_ENV, NsysCapture(torch)), (MEMORY_ENV, MemoryCapture(torch, run_dir))):
        text = os.environ.get(variable)
        if not text:
            continue
        try:
            windows.append(StepWindow(capture, *parse_steps(text)))
        except ValueError as exc:
            print(f"sysprof trace: ${variable} {exc}; no steps {capture.done}", file=sys.stderr)
    return windows
