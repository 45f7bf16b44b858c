"""One timed step: wall time with a synchronize, per-phase CUDA-event time, per-phase peak memory.

Phase timing uses CUDA events on CUDA (device time, no extra host syncs inside the step) and the host
clock with a device synchronize elsewhere (CPU work is synchronous anyway). A small model in bf16 is
launch-bound: every microsecond of host work inside a step shows up in its time, so the instruments are
built once and reused, and each phase boundary costs one NVTX call, one event record and one stats query.
"""
from __future__ import annotations

import math
import time

import torch

from sysprof.models.nvtx import nvtx_range
from sysprof.models.phases import PHASE_RANGES
from sysprof.profiler_core.base.records import StepRecord
from sysprof.profiler_core.runner.run_queue import RunQueueClock
from sysprof.profiler_core.runner.workload import Workload


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class StepInstruments:
    """Per-phase timers and memory counters for one step at a time; results valid after the step's sync."""

    def __init__(self, device: torch.device):
        self.device, self.on_cuda = device, device.type == "cuda"
        self.events = {p: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for p in PHASE_RANGES} if self.on_cuda else {}
        self.current_phase: str | None = None
        self.run_queue = RunQueueClock()  # built on the thread that runs the steps: its delay is the one read
        self.reset()

    def reset(self) -> None:
        self.host_marks: dict[str, list[float]] = {}
        self.allocated: dict[str, int] = {}
        self.reserved: dict[str, int] = {}
        self.in_use_after: dict[str, int] = {}

    def phase(self, name: str) -> _Phase:
        return _Phase(self, name)

    def elapsed_ms(self) -> dict[str, float]:
        if self.on_cuda:
            return {p: self.events[p][0].elapsed_time(self.events[p][1]) for p in self.allocated}
        return {p: (end - start) * 1e3 for p, (start, end) in self.host_marks.items()}

    def record_memory(self, name: str) -> None:
        # One nested query: max_memory_allocated() and friends each rebuild and flatten the whole dict.
        stats = torch.cuda.memory_stats_as_nested_dict()
        self.allocated[name] = stats["allocated_bytes"]["all"]["peak"]
        self.reserved[name] = stats["reserved_bytes"]["all"]["peak"]
        self.in_use_after[name] = stats["allocated_bytes"]["all"]["current"]


class _Phase:
    """NVTX range + peak-memory reset + timing around one phase (a class: cheaper than @contextmanager)."""

    __slots__ = ("instruments", "name", "range")

    def __init__(self, instruments: StepInstruments, name: str):
        self.instruments, self.name = instruments, name
        self.range = nvtx_range(PHASE_RANGES[name])

    def __enter__(self) -> None:
        tools = self.instruments
        tools.current_phase = self.name
        self.range.__enter__()
        if tools.on_cuda:
            torch.cuda.reset_peak_memory_stats()
            tools.events[self.name][0].record()
        else:
            tools.host_marks[self.name] = [time.perf_counter()]

    def __exit__(self, *exc_info) -> None:
        tools = self.instruments
        if tools.on_cuda:
            tools.events[self.name][1].record()
            tools.record_memory(self.name)
        else:
            synchronize(tools.device)
            tools.host_marks[self.name].append(time.perf_counter())
        self.range.__exit__(*exc_info)


def loss_fields(loss: float) -> StepRecord:
    """The step's loss for steps.jsonl, which stays strict JSON: NaN and infinity (that JSON has no words for) are
    null, with the value in words beside it for the run's warning."""
    if math.isfinite(loss):
        return {"loss": loss}
    return {"loss": None, "loss_not_finite": str(loss)}


def run_step(work: Workload, tools: StepInstruments) -> StepRecord:
    """Run one step of the configured mode; returns its timing and memory record."""
    tools.reset()
    queued_before = tools.run_queue.waited_ms()
    started = time.perf_counter()
    with tools.phase("forward"):
        loss = work.forward()
    if work.cfg.mode != "forward":
        with tools.phase("backward"):
            work.backward(loss)
    if work.cfg.mode == "train":
        with tools.phase("optimizer"):
            work.optimizer_step()
    elif work.cfg.mode == "forward_backward":
        work.zero_grad()
    synchronize(work.device)
    wall_ms = (time.perf_counter() - started) * 1e3
    queued_after = tools.run_queue.waited_ms()
    last_phase = tools.current_phase
    assert last_phase is not None  # the forward phase above set it
    tools.current_phase = None  # the step is over: a failure after it is in no phase
    record: StepRecord = {
        "wall_ms": wall_ms, "phases_ms": tools.elapsed_ms(), **loss_fields(float(loss.detach())),
        "peak_allocated_bytes": dict(tools.allocated), "peak_reserved_bytes": dict(tools.reserved),
        "memory_before_backward_bytes": tools.in_use_after.get("forward"),
        "memory_after_step_bytes": tools.in_use_after.get(last_phase),
        "cpu_wait_ms": None if queued_before is None or queued_after is None else queued_after - queued_before}
    return record
