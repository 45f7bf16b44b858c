"""The tracker a training script holds: `with tracker.step():` around each step, `with tracker.phase(name):` around
its parts. Nothing here waits for the GPU while the loop runs (clock.py); a step's times are read a step or more
later, when its last event has completed, and written to the run directory then (run_files.py).

The user's job never fails because of the tracker: a misuse (a phase outside a step, one inside another, a step
inside a step) is said once on stderr and left untimed; a failed write stops the tracing, said once."""
from __future__ import annotations

import sys
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sysprof.profiler_core.memory.phases import PHASE_ANNOTATION
from sysprof.trace.clock import HostClock, StepMarks, clock_for
from sysprof.trace.run_files import TraceRun, environment
from sysprof.trace.step_windows import StepWindow


@dataclass(frozen=True)
class Timing:
    """What the user asked of the tracker: warm-up steps left out of the statistics, the tokens of a step, the
    device whose clock times it (None: decided at the first step), and every how many steps memory peaks are read
    (reading the allocator's statistics costs tens of µs a phase: too much for every step of a short one)."""
    warmup: int
    tokens_per_step: int | None
    device: str | None
    memory_every: int


class StepHandle:
    """What `with tracker.step() as step:` gives: step.record(loss=…, tokens=…) any time inside the step."""

    def __init__(self, tracker: Tracker, marks: StepMarks):
        self.tracker, self.marks = tracker, marks

    def record(self, loss: Any = None, tokens: int | None = None) -> None:
        if loss is not None:
            self.marks.loss = self.tracker.loss_copy(loss)
        if tokens is not None:
            self.marks.tokens = int(tokens)


class Tracker:
    def __init__(self, run: TraceRun, timing: Timing, torch_module: Any = None):
        self.run, self.timing, self.torch = run, timing, torch_module
        self.clock: HostClock | None = None  # chosen at the first step, once the model is on its device
        self.pinned: list[Any] = []  # host scalars a step's loss is copied into, reused once read
        self.pending: deque[StepMarks] = deque()
        self.current: StepMarks | None = None
        self.in_phase: str | None = None
        self.count = 0
        self.said: set[str] = set()
        self.stopped = False  # a write failed, or finish() ran: the loop goes on untraced
        self.windows: list[StepWindow] = []  # steps nsys or the allocator's history records (step_windows.py)
        self.raised_in: int | None = None  # the step an exception left unfinished: a capture holds it too

    @property
    def run_dir(self):
        return self.run.run_dir

    @contextmanager
    def step(self):
        if self.stopped or self.current is not None:  # finished or failed to write (said then), or a misuse
            if not self.stopped:
                self._say("nested", "a step inside a step: the inner one is not timed")
            yield StepHandle(self, StepMarks(-1, HostClock().mark()))
            return
        if self.clock is None:
            self._first_step()
        assert self.clock is not None
        for window in self.windows:  # before the step's first mark: its wait for the GPU is no step's time
            window.step_starts(self.count, self.clock.cuda)
        self.current = StepMarks(self.count, self.clock.mark(), tokens=self.timing.tokens_per_step,
                                 recorded_by=self._recorded_by())
        self._range_push(f"step {self.count}")
        try:
            yield StepHandle(self, self.current)
        except BaseException:  # the step did not finish: it is not a step's time (the error ends the run)
            self.current, self.in_phase, self.raised_in = None, None, self.count
            self._range_pop()
            raise
        self._end_step()

    def _first_step(self) -> None:
        self.clock = clock_for(self.torch, self.timing.device)
        env = environment(self.torch, self.clock.cuda)
        self._safely(self.run.started_on, "cuda" if self.clock.cuda else "cpu", env)

    def _end_step(self) -> None:
        marks, self.current = self.current, None
        assert marks is not None and self.clock is not None
        marks.end = self.clock.mark()
        self._range_pop()
        self.count += 1
        for window in self.windows:
            window.step_ends(marks.index)
        self.pending.append(marks)
        self._write_done()

    @contextmanager
    def phase(self, name: str):
        if self.stopped or self.current is None or self.in_phase is not None:
            if not self.stopped:  # a misuse, said once; a finished tracker times nothing, silently
                self._say(f"phase {name}", f"phase {name!r} outside a step or inside another phase: not timed")
            yield
            return
        marks, self.in_phase, clock = self.current, name, self.clock
        assert clock is not None
        start = clock.mark()
        self._range_push(name)
        note = self._phase_note(name, marks)
        sampled = clock.cuda and marks.index % self.timing.memory_every == 0
        if sampled:
            self.torch.cuda.reset_peak_memory_stats()
        try:
            yield
        finally:
            marks.phases.append((name, start, clock.mark()))
            if sampled:  # the allocator's own counters: read on the host, no wait for the GPU
                marks.peaks[name] = int(self.torch.cuda.max_memory_allocated())
            if note is not None:
                note.__exit__(None, None, None)
            self._range_pop()
            self.in_phase = None

    def loss_copy(self, loss: Any) -> Any:
        """A float now, or for a CUDA tensor a pinned host copy that arrives with the step (no wait here)."""
        if self.torch is not None and isinstance(loss, self.torch.Tensor):
            if loss.is_cuda:
                host = self.pinned.pop() if self.pinned else self.torch.empty((), pin_memory=True)
                host.copy_(loss.detach().reshape(()), non_blocking=True)
                return host
            return float(loss.detach())
        return float(loss)

    def _write_done(self, everything: bool = False) -> None:
        clock = self.clock
        while clock is not None and self.pending and (everything or clock.done(self.pending[0])):
            marks = self.pending.popleft()
            record = self._record(marks, clock)
            clock.release(marks)
            if self.torch is not None and isinstance(marks.loss, self.torch.Tensor):
                self.pinned.append(marks.loss)
            self._safely(self.run.write_step, record)

    def _phase_note(self, name: str, marks: StepMarks) -> Any:
        """In a step whose allocator history is recorded, the phase as a record_function range, which the history
        keeps beside its events: the memory analysis then knows each allocation's phase from the loop itself."""
        if marks.recorded_by != "memory":
            return None
        try:
            note = self.torch.profiler.record_function(PHASE_ANNOTATION + name)
            note.__enter__()
        except Exception:  # the phases are then inferred from stack frames, as for a `sysprof run`
            return None
        return note

    def _recorded_by(self) -> str | None:
        """The pass of a step that a slowing capture records (left out of the statistics), None for a clean one."""
        return next((w.capture.pass_name for w in self.windows if w.recording() and w.capture.pass_name), None)

    def _record(self, marks: StepMarks, clock: HostClock) -> dict[str, Any]:
        assert marks.end is not None
        phases: dict[str, float] = {}  # a phase entered more than once a step (gradient accumulation): its sum
        host: dict[str, float] = {}
        for name, start, end in marks.phases:
            phases[name] = phases.get(name, 0.0) + clock.elapsed_ms(start, end)
            host[name] = host.get(name, 0.0) + (end.host_s - start.host_s) * 1e3
        record: dict[str, Any] = {
            "kind": "warmup" if marks.index < self.timing.warmup else "measured", "index": marks.index,
            "wall_ms": clock.elapsed_ms(marks.start, marks.end), "phases_ms": phases, "host_ms": host,
            "clock": "cuda" if clock.cuda else "host", "tokens": marks.tokens,
            "loss": _loss_value(marks.loss)}
        if marks.peaks:
            record["peak_allocated_bytes"] = marks.peaks
        if marks.recorded_by:
            record["pass"] = marks.recorded_by
        return record

    def _range_push(self, name: str) -> None:
        if self.clock is not None and self.clock.cuda:
            self.torch.cuda.nvtx.range_push(name)

    def _range_pop(self) -> None:
        if self.clock is not None and self.clock.cuda:
            self.torch.cuda.nvtx.range_pop()

    def finish(self, error: BaseException | None = None) -> dict[str, Any] | None:
        """The steps still in flight waited for and written, then the summary. Once; later calls return None."""
        if self.stopped:
            return None
        if self.clock is not None:
            self.clock.wait()
        for window in self.windows:
            self.run.notes.append(window.close(self.count, self._last_begun()))
            self.run.extra[window.capture.key] = window.captured()
        self._write_done(everything=True)
        self.stopped = True
        return self._safely(self.run.finish, error)

    def _last_begun(self) -> int:
        return self.raised_in if self.raised_in is not None else self.count - 1

    def _safely(self, write, *args):
        try:
            return write(*args)
        except OSError as exc:
            self.stopped = True
            for window in self.windows:  # no step ends any more: a capture left open would slow the rest of the job
                window.close(self.count, self._last_begun())
            self._say("write", f"cannot write to {self.run.run_dir}: {exc}; tracing stopped, your job goes on")
            return None

    def _say(self, key: str, message: str) -> None:
        if key not in self.said:
            self.said.add(key)
            print(f"sysprof trace: {message}", file=sys.stderr)


def _loss_value(loss: Any) -> float | None:
    if loss is None:
        return None
    value = float(loss.item()) if hasattr(loss, "item") else float(loss)
    return value if value == value and abs(value) != float("inf") else None  # strict JSON: no NaN or inf
