"""`sweep --gpus 0,1`: independent single-GPU cells side by side, one per GPU.

Each cell runs as its own session process (python -m sysprof.profiler_core.session) with CUDA_VISIBLE_DEVICES naming its
GPU, so the runner, its NVML watch and everything the cell records see that GPU as theirs; the runner records the
variable in the cell's manifest (the sweep's `gpu` column). A cell's repeats run in a row on its GPU, not
round-robin over the sweep: cells on different GPUs already differ by the GPU, which the tables say.
"""
from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.nvml import visible_gpu_count

SESSION_STDERR = "session-stderr.log"  # in the cell's directory: the session process's own stderr


def gpus_problem(gpus: Sequence[str], configs: Sequence[RunConfig], visible: int | None = None) -> str | None:
    """--gpus takes distinct GPU ids (as CUDA_VISIBLE_DEVICES names them) for single-GPU cells."""
    if len(set(gpus)) != len(gpus) or not all(gpus):
        return f"--gpus lists each GPU once; got {','.join(gpus)}"
    visible = visible_gpu_count() if visible is None else visible
    numbers = [int(gpu) for gpu in gpus if gpu.isdigit()]
    if any(number >= visible for number in numbers):
        return f"--gpus {','.join(gpus)}: {visible} GPU(s) on this host (NVML counts 0 to {visible - 1})"
    if any(cfg.distributed for cfg in configs):
        return "--gpus runs single-GPU cells side by side; a cell with --nproc > 1 takes its GPUs itself"
    if any(cfg.device not in ("auto", "cuda") for cfg in configs):
        return "--gpus runs cells on GPUs; a cell with --device cpu or mps needs none"
    return None


def parse_gpus(text: str | None) -> list[str]:
    return [gpu.strip() for gpu in text.split(",")] if text else []


PrepareCell = Callable[[int], tuple[Path, bool]]  # cell index → its directory, made ready, and whether to resume it


class GpuPool:
    """Worker threads, one per GPU, taking the next pending cell until none is left or the sweep is stopped.

    prepare: the sweep's own preparation of a cell's directory (sweep.cell_preparer), so that the pool and a
    sequential sweep keep or clear an interrupted cell alike."""

    def __init__(self, configs: Sequence[RunConfig], prepare: PrepareCell, on_event: Callable[[dict], None],
                 nsys: str | None):
        self.configs, self.prepare, self.nsys = configs, prepare, nsys
        self.lock, self.stopped = threading.Lock(), threading.Event()
        self.queue: list[int] = []
        self.done = self.total = 0
        self._on_event = on_event

    def emit(self, event: dict) -> None:
        with self.lock:  # one listener, several threads: its output must not interleave
            self._on_event(event)

    def work(self, gpu: str) -> None:
        while not self.stopped.is_set():
            with self.lock:
                if not self.queue:
                    return
                index = self.queue.pop(0)
            self.emit({"event": events.CELL, "index": index, "config": self.configs[index].to_dict(), "gpu": gpu,
                       "done": self.done, "pending": self.total, "repeat": 1, "eta_s": None})
            status, reason = self.run_cell(index, gpu)
            with self.lock:
                self.done += 1
            self.emit({"event": events.CELL_DONE, "index": index, "status": status, "reason": reason, "gpu": gpu})
            if status == events.CANCELLED:
                self.stopped.set()

    def run_cell(self, index: int, gpu: str) -> tuple[str, str]:
        """The cell's whole session on one GPU; its status (cancelled when the user stopped it) and why it did not
        finish, if it did not."""
        from sysprof.profiler_core.session.process import session_argv

        cfg = self.configs[index]
        path, resume = self.prepare(index)
        argv = session_argv(cfg, path, self.nsys) + (["--resume"] if resume else [])
        with (path / SESSION_STDERR).open("ab") as stderr:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=stderr, check=False,
                           env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu})
        summary = _summary(path) or {"status": events.FAILED_STATUS,
                                     "error": {"kind": events.FAILED_STATUS, "message": f"no summary in {path}"}}
        error = summary.get("error") or {}
        status = events.CANCELLED if error.get("kind") == events.CANCELLED else summary["status"]
        return status, events.cell_reason(summary)

    def interrupt(self) -> None:
        """Ctrl-C or the app's cancel: no new cell starts. The SIGINT reached the running sessions too (they are in
        the sweep's process group, where the terminal and the app send it); each saves its steps and stops. A second
        SIGINT from here could cut a session short while it saves, so none is sent."""
        self.stopped.set()


def _summary(path: Path) -> dict | None:
    try:
        return rundir.read_json(path / rundir.SUMMARY)
    except rundir.RunDirError:
        return None  # a torn summary: the cell failed


def run_on_gpus(configs: Sequence[RunConfig], prepare: PrepareCell, pending: list[int], gpus: Sequence[str],
                on_event: Callable[[dict], None], nsys: str | None) -> None:
    problem = gpus_problem(gpus, [configs[i] for i in pending])
    if problem:
        raise ConfigError(problem)
    on_event({"event": events.STUDY, "cells": len(configs), "pending": len(pending), "gpus": list(gpus)})
    run_pool(GpuPool(configs, prepare, on_event, nsys), pending, gpus)


def run_pool(pool: GpuPool, pending: list[int], gpus: Sequence[str]) -> None:
    """One worker per GPU until every pending cell ran (or the user stopped the sweep)."""
    pool.queue, pool.total = list(pending), len(pending)
    workers = [threading.Thread(target=pool.work, args=(gpu,), name=f"gpu-{gpu}") for gpu in gpus]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.join()
    except KeyboardInterrupt:
        pool.interrupt()
        for worker in workers:
            worker.join()
