"""One timed step: wall time with a synchronize, per-phase CUDA-event time, per-phase peak memory.

Phase timing uses CUDA events on CUDA (device time, no extra host syncs inside the step) and the host
clock with a device synchronize elsewhere (CPU work is synchronous anyway).
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from models.nvtx import nvtx_range
from profiler_core.workload import Workload


class PhaseClock:
    """Times named phases of one step; read the results only after the step synchronized."""

    def __init__(self, device: torch.device):
        self.device = device
        self.on_cuda = device.type == "cuda"
        self._marks: dict[str, tuple] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.on_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
        else:
            start = time.perf_counter()
            yield
            synchronize(self.device)
            end = time.perf_counter()
        self._marks[name] = (start, end)

    def elapsed_ms(self) -> dict[str, float]:
        if self.on_cuda:
            return {name: start.elapsed_time(end) for name, (start, end) in self._marks.items()}
        return {name: (end - start) * 1e3 for name, (start, end) in self._marks.items()}


class PhaseMemory:
    """Peak allocated/reserved bytes per phase: the peak counter is reset as each phase starts.

    One nested-stats query per phase: max_memory_allocated() and friends each rebuild and flatten the
    whole stats dict, host time that a launch-bound step would pay inside its measured wall time.
    """

    def __init__(self, device: torch.device):
        self.on_cuda = device.type == "cuda"
        self.allocated: dict[str, int] = {}
        self.reserved: dict[str, int] = {}
        self.in_use_after: dict[str, int] = {}
        self.current_phase: str | None = None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.current_phase = name
        if self.on_cuda:
            torch.cuda.reset_peak_memory_stats()
        yield
        if self.on_cuda:
            stats = torch.cuda.memory_stats_as_nested_dict()
            self.allocated[name] = stats["allocated_bytes"]["all"]["peak"]
            self.reserved[name] = stats["reserved_bytes"]["all"]["peak"]
            self.in_use_after[name] = stats["allocated_bytes"]["all"]["current"]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@contextmanager
def _phase(name: str, nvtx_name: str, clock: PhaseClock, memory: PhaseMemory) -> Iterator[None]:
    with nvtx_range(nvtx_name), memory.phase(name), clock.phase(name):
        yield


def run_step(work: Workload, memory: PhaseMemory) -> dict:
    """Run one step of the configured mode; returns its timing and memory record."""
    clock = PhaseClock(work.device)
    started = time.perf_counter()
    with _phase("forward", "forward", clock, memory):
        loss = work.forward()
    if work.cfg.mode != "forward":
        with _phase("backward", "backward", clock, memory):
            work.backward(loss)
    if work.cfg.mode == "train":
        with _phase("optimizer", "optimizer step", clock, memory):
            work.optimizer_step()
    elif work.cfg.mode == "forward_backward":
        work.zero_grad()
    synchronize(work.device)
    wall_ms = (time.perf_counter() - started) * 1e3
    return {"wall_ms": wall_ms, "phases_ms": clock.elapsed_ms(), "loss": float(loss.detach()),
            "peak_allocated_bytes": dict(memory.allocated), "peak_reserved_bytes": dict(memory.reserved),
            "memory_before_backward_bytes": memory.in_use_after.get("forward"),
            "memory_after_step_bytes": memory.in_use_after.get(memory.current_phase)}
