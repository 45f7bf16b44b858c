"""What the runner records around its measured steps, besides timing (runner side; imports torch).

Each capture is a separate pass over the same config: recording perturbs the steps it records
(nsys +32–115%, allocator history +21–38% on the H200), so the clean timing never runs under one.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

from sysprof.models.nvtx import mirror_to_torch_profiler
from sysprof.profiler_core.base.rundir import MEMORY_SNAPSHOT, TORCH_TRACE


@contextlib.contextmanager
def torch_profiler_capture(run_dir: Path) -> Iterator[None]:
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    mirror_to_torch_profiler(True)
    profiler = torch.profiler.profile(activities=activities)
    try:
        with profiler:
            yield
    finally:  # also after an OOM or a cancel: the steps recorded so far are worth keeping
        mirror_to_torch_profiler(False)
        _export_trace(profiler, run_dir / TORCH_TRACE)


def _export_trace(profiler: torch.profiler.profile, path: Path) -> None:
    failing = sys.exc_info()[0] is not None
    try:
        profiler.export_chrome_trace(str(path))
    except Exception:  # nothing recorded (it never started): the step's own error is the one to report
        if not failing:
            raise


class MemoryHistory:
    """Allocator history with Python stacks; dumped at the end, or at an OOM, in memory_viz's format."""

    def __init__(self, run_dir: Path, max_entries: int):
        self.path, self.max_entries = run_dir / MEMORY_SNAPSHOT, max_entries
        self.recording = False

    def start(self) -> None:
        torch.cuda.memory._record_memory_history(max_entries=self.max_entries, stacks="python")
        self.recording = True

    def dump_and_stop(self) -> Path | None:
        if not self.recording:
            return None
        torch.cuda.memory._dump_snapshot(str(self.path))
        torch.cuda.memory._record_memory_history(enabled=None)
        self.recording = False
        return self.path

    @contextlib.contextmanager
    def over_measured_steps(self) -> Iterator[None]:
        self.start()
        yield
        self.dump_and_stop()


def measured_capture(kind: str, run_dir: Path, memory: MemoryHistory | None) -> contextlib.AbstractContextManager:
    """The context the measured steps run in; nsys needs nothing here (cudaProfilerStart/Stop suffice)."""
    if kind == "torch":
        return torch_profiler_capture(run_dir)
    if kind == "memory" and memory is not None:
        return memory.over_measured_steps()
    return contextlib.nullcontext()
