"""`sysprof trace [OPTIONS] -- python train.py ARGS…` (or `-- train.py ARGS…`, or `--nproc N -- train.py ARGS…`
through torchrun): the user's own training script, unchanged, its steps timed by hooks (trace/hooks.py) into a run
directory per process that every other command reads. Its exit code is the script's."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from sysprof.profiler_core.base.errors import UsageError
from sysprof.trace import DEFAULT_WARMUP

LAUNCH = ["-m", "sysprof.trace.launch"]


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
    parser.add_argument("script", nargs=argparse.REMAINDER,
                        help="after --: python train.py ARGS… (or train.py ARGS…, or -m MODULE ARGS…)")


def traced_argv(command: list[str], nproc: int | None) -> list[str]:
    """The command with the launcher put before the script: `python train.py a` → `python -m
    sysprof.trace.launch train.py a`; with nproc, torchrun starts the launcher once per process."""
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
    if nproc:
        return [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", *LAUNCH, *script]
    return [python, *LAUNCH, *script]


def check_installed(python: str) -> None:
    """The script's python must import sysprof's launcher: a python of another environment is said up front."""
    try:
        found = subprocess.run([python, "-c", "import sysprof.trace.hooks"], capture_output=True).returncode == 0
    except OSError as exc:
        raise UsageError(f"cannot start {python}: {exc.strerror or exc}") from None
    if not found:
        raise UsageError(f"{python} cannot import sysprof: run your script with the python sysprof is installed in "
                         f"({sys.executable}), or install sysprof into that environment")


def command_trace(args) -> int:
    if args.warmup < 0:  # argparse's own type error names the option for the rest
        raise UsageError(f"--warmup must be 0 or more; got {args.warmup}")
    argv = traced_argv(args.script, args.nproc)
    check_installed(argv[0])
    env = dict(os.environ)  # the script's own environment, with the run's options added
    env |= {"SYSPROF_TRACE_NAME": args.name, "SYSPROF_TRACE_WARMUP": str(args.warmup)}
    env |= {"SYSPROF_TRACE_TOKENS": str(args.tokens_per_step)} if args.tokens_per_step else {}
    env |= {"SYSPROF_RUNS": args.runs_dir} if args.runs_dir else {}
    try:
        return subprocess.call(argv, env=env)
    except KeyboardInterrupt:  # the script had it too, and ends its run with it
        return 130
