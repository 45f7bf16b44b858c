"""The profiled pass started beside the clean one and held (runner/hold.py) until the clean pass has ended.

A held runner has Python, torch and a CUDA context up, under nsys when that is the backend, and blocks reading its
stdin: while the clean steps are measured it runs nothing. It holds the GPU memory of one CUDA context, so it is
started only where the config's predicted peak leaves that room; never with ranks (torchrun starts those)."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.nvml import visible_gpu_count
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.memory.fit import device_memory
from sysprof.profiler_core.session.process import RunnerProcess, runner_argv

# A CUDA context and its allocator's first segment take ~0.5 GiB; the predicted peak must leave this much beside it.
HELD_CONTEXT_ROOM = 2 * 1024**3


def can_prestart(cfg: RunConfig) -> bool:
    if cfg.distributed or cfg.device not in ("auto", "cuda") or visible_gpu_count() == 0:
        return False
    limit = device_memory("cuda")
    return limit is not None and predict_run_memory(cfg)["peak_bytes"] + HELD_CONTEXT_ROOM <= limit[0]


class HeldPass:
    """A runner started now for a later pass, released by the session when that pass is due."""

    def __init__(self, cfg: RunConfig, pass_dir: Path, capture: str, launcher: list[str]):
        self.pass_dir, self.started = pass_dir, time.monotonic()
        pass_dir.mkdir(exist_ok=True)
        self.process: RunnerProcess | None = RunnerProcess(runner_argv(cfg, pass_dir, capture, launcher, hold=True),
                                                           pass_dir, held=True)

    def take(self) -> tuple[RunnerProcess, float]:
        """The process, released, and how long it was held: started before the pass was due."""
        process, self.process = self.process, None
        assert process is not None  # taken once, by the pass it was started for
        process.release()
        return process, time.monotonic() - self.started

    def discard(self) -> None:
        """Not needed (the clean pass failed or was cancelled): stop it and remove what it left."""
        if self.process is None:
            return
        self.process.abandon()
        self.process = None
        shutil.rmtree(self.pass_dir, ignore_errors=True)
