"""`sysprof trace [OPTIONS] -- python train.py ARGS…` (or `-- train.py ARGS…`, or `--nproc N -- train.py ARGS…`
through torchrun): the user's own training script, unchanged, its steps timed by hooks (trace/hooks.py) into one run
directory that every other command reads (each rank in its place there); `--profile-steps 200-220` captures those
steps under nsys for kernel tables per phase, `--memory-steps 300-302` the allocator's history for the memory
analysis. Its exit code is the script's (trace/job.py)."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.session.backends import Backend, choose_backend
from sysprof.trace import DEFAULT_WARMUP
from sysprof.trace.job import Job, run_job
from sysprof.trace.starting import slug
from sysprof.trace.step_windows import MEMORY_ENV, PROFILE_ENV, parse_steps


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(text)
    return value


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="trace", help="the run directory's name (default trace)")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                        help=f"first steps left out of the statistics (default {DEFAULT_WARMUP})")
    parser.add_argument("--tokens-per-step", type=positive_int, help="tokens of one step, for tokens/s")
    parser.add_argument("--runs-dir", help="where the run directory goes (default $SYSPROF_RUNS or ./runs)")
    parser.add_argument("--nproc", type=positive_int, help="processes on this node, through torchrun")
    parser.add_argument("--profile-steps", metavar="FIRST-LAST",
                        help="capture these steps (counted from 0) under nsys: kernel tables per phase, per rank")
    parser.add_argument("--memory-steps", metavar="FIRST-LAST",
                        help="record the CUDA allocator's history over these steps: the memory analysis, per rank")
    parser.add_argument("--nsys", help="the nsys to use (default: $SYSPROF_NSYS, PATH, the usual install folders)")
    parser.add_argument("script", nargs=argparse.REMAINDER,
                        help="after --: python train.py ARGS… (or train.py ARGS…, or -m MODULE ARGS…)")


def traced_command(command: list[str]) -> list[str]:
    """The python and the script with its arguments: `-- python train.py a` → [python, train.py, a]; `train.py a`
    gets this python."""
    words = command[1:] if command and command[0] == "--" else command
    if words and Path(words[0]).name.startswith("python") and not words[0].endswith(".py"):
        python, script = words[0], words[1:]
    else:
        python, script = sys.executable, words
    if not script or (script[0] != "-m" and not script[0].endswith(".py")):
        raise UsageError("sysprof trace needs the script to run after --: `sysprof trace -- python train.py ARGS` "
                         "(or -- -m MODULE ARGS)")
    if script[0].endswith(".py") and not Path(script[0]).is_file():
        raise UsageError(f"no such script {script[0]}")
    return [python, *script]


def check_installed(python: str) -> None:
    """The script's python must import sysprof's launcher: a python of another environment is said up front."""
    try:
        found = subprocess.run([python, "-c", "import sysprof.trace.hooks"], capture_output=True).returncode == 0
    except OSError as exc:
        raise UsageError(f"cannot start {python}: {exc.strerror or exc}") from None
    if not found:
        raise UsageError(f"{python} cannot import sysprof: run your script with the python sysprof is installed in "
                         f"({sys.executable}), or install sysprof into that environment")


def _window(option: str, text: str | None) -> tuple[int, int] | None:
    try:
        return None if text is None else parse_steps(text)
    except ValueError as exc:
        raise UsageError(f"{option} {exc}") from None


def _windows(args) -> tuple[dict[str, str], Backend | None]:
    """--profile-steps and --memory-steps checked (apart: recording memory would slow the profiled kernels) and
    nsys found, before anything starts: the job's environment for them, and the backend that reads the profile."""
    profile, memory = _window("--profile-steps", args.profile_steps), _window("--memory-steps", args.memory_steps)
    if profile and memory and profile[0] <= memory[1] and memory[0] <= profile[1]:
        raise UsageError(f"--profile-steps {args.profile_steps} and --memory-steps {args.memory_steps} overlap: "
                         f"recording memory slows the steps nsys profiles; choose steps apart")
    env = {variable: f"{window[0]}-{window[1]}" for variable, window in ((PROFILE_ENV, profile), (MEMORY_ENV, memory))
           if window}
    return env, choose_backend("nsys", args.nsys)[0] if profile else None


def command_trace(args) -> int:
    if args.warmup < 0:  # argparse's own type error names the option for the rest
        raise UsageError(f"--warmup must be 0 or more; got {args.warmup}")
    command = traced_command(args.script)
    windows, backend = _windows(args)
    check_installed(command[0])
    options = {"SYSPROF_TRACE_NAME": args.name, "SYSPROF_TRACE_WARMUP": str(args.warmup), **windows}
    options |= {"SYSPROF_TRACE_TOKENS": str(args.tokens_per_step)} if args.tokens_per_step else {}
    run_dir = rundir.new_timestamped_dir(rundir.runs_root(args.runs_dir), f"trace-{slug(args.name)}")
    return run_job(Job(command, run_dir, args.nproc or 1, options, backend))
