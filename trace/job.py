"""A traced job as `sysprof trace` runs it: the user's command, launched into a run directory made for it, under nsys
when steps are to be profiled; the node watched while it runs (from this process, never the job's); and, once it
has ended, the summary completed with what only the whole job gives (settle.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sysprof.profiler_core.base.nvml import visible_gpu_count
from sysprof.profiler_core.base.rundir import PROFILED_DIR
from sysprof.profiler_core.documents.liveness import RUN
from sysprof.profiler_core.session.backends import Backend
from sysprof.profiler_core.session.live import Heartbeat
from sysprof.profiler_core.session.watch import MeasuredWatch
from sysprof.trace.settle import settle_job
from sysprof.trace.starting import RUN_DIR_ENV
from sysprof.trace.step_windows import MEMORY_ENV, parse_steps


@dataclass(frozen=True)
class Job:
    """What to launch: the command (python and script), the run directory, torchrun's process count (1: none), the
    run's options for the job's environment (the steps to profile or record among them), and the backend that
    profiles the steps (None: none are)."""
    command: list[str]
    run_dir: Path
    nproc: int
    options: dict[str, str]
    backend: Backend | None = None


def launched_argv(job: Job) -> list[str]:
    """`python -m sysprof.trace.launch SCRIPT…`, after torchrun (--nproc) and nsys (--profile-steps): each rank
    under its own nsys, whose report is named by its rank (the `sysprof run --nproc` layout)."""
    python, script = job.command[0], job.command[1:]
    launch = [python, "-m", "sysprof.trace.launch", *script]
    pass_dir = job.run_dir / PROFILED_DIR
    profiler = job.backend.launcher(pass_dir, ranks=job.nproc > 1) if job.backend else []
    if job.nproc > 1:
        torchrun = [python, "-m", "torch.distributed.run", f"--nproc-per-node={job.nproc}"]
        return [*torchrun, "--no-python", *profiler, *launch] if profiler else [*torchrun, *launch[1:]]
    return [*profiler, *launch]


def run_job(job: Job) -> int:
    """The job's exit code, once its run is settled; what the run could not get is said on stderr. The run is marked
    live by this process from the launch to the last event (settle.py writes it), so `sysprof ps`, `attach` and the
    app follow it through the reading of its profiled and memory steps."""
    heartbeat = Heartbeat(job.run_dir, RUN, {"model": job.options.get("SYSPROF_TRACE_NAME"), "source": "trace"})
    heartbeat.start()
    try:
        code, watch = _launched(job)
        if job.backend is not None:
            print("sysprof trace: reading the profiled steps' kernels…", file=sys.stderr)
        memory = job.options.get(MEMORY_ENV)
        for line in settle_job(job.run_dir, job.nproc, job.backend, watch, parse_steps(memory) if memory else None):
            print(f"sysprof trace: {line}", file=sys.stderr)
    finally:
        heartbeat.stop()
    return code if code >= 0 else 128 - code  # killed by signal N: the shell's 128 + N


def _launched(job: Job) -> tuple[int, MeasuredWatch]:
    """The job run to its end with the node watched meanwhile: its exit code (−N: killed by signal N)."""
    env = dict(os.environ) | job.options | {RUN_DIR_ENV: str(job.run_dir)}
    if job.backend is not None:
        (job.run_dir / PROFILED_DIR).mkdir(parents=True, exist_ok=True)
    watch = MeasuredWatch("cuda" if visible_gpu_count() else "cpu", job.nproc)
    print(f"sysprof trace: run directory {job.run_dir}", file=sys.stderr)
    process = subprocess.Popen(launched_argv(job), env=env)
    watch.start(process.pid)
    try:
        code = process.wait()
    except KeyboardInterrupt:  # the job had it too, and ends its run with it
        code = process.wait()
    finally:
        watch.stop()
    return code, watch
