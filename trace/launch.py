"""`python -m sysprof.trace.launch SCRIPT [ARGS…]` (or `-m MODULE [ARGS…]`): the user's script, run as
`python SCRIPT ARGS…` would run it, with its steps timed by hooks (hooks.py) into a run directory. What
`sysprof trace -- python train.py …` starts, once per rank under torchrun. The run's options come in the
environment (SYSPROF_TRACE_NAME, SYSPROF_TRACE_WARMUP, SYSPROF_TRACE_TOKENS, the run directory SYSPROF_TRACE_DIR
with each rank in its place there, the steps to profile SYSPROF_TRACE_PROFILE or record SYSPROF_TRACE_MEMORY), so
the user's own arguments pass through untouched."""
from __future__ import annotations

import atexit
import importlib.util
import os
import runpy
import sys
from pathlib import Path

from sysprof import trace
from sysprof.trace.hooks import install, say_at_end
from sysprof.trace.starting import RUN_DIR_ENV


def _started():
    tokens = os.environ.get("SYSPROF_TRACE_TOKENS")
    return trace.start(name=os.environ.get("SYSPROF_TRACE_NAME") or "trace",
                       warmup=int(os.environ.get("SYSPROF_TRACE_WARMUP") or trace.DEFAULT_WARMUP),
                       tokens_per_step=int(tokens) if tokens else None)


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    if argv[0] == "-m" and (len(argv) < 2 or not _module_found(argv[1])):  # before a run directory is made
        print(f"sysprof trace: no module named {' '.join(argv[1:2])!r} to run", file=sys.stderr)
        raise SystemExit(2)
    tracker = _started()
    auto = install(tracker) if isinstance(tracker, trace.Tracker) else None
    if auto is not None:
        atexit.register(say_at_end, auto)  # registered after start()'s: runs before the run is finished
        if RUN_DIR_ENV not in os.environ:  # else `sysprof trace` made it, and said so
            print(f"sysprof trace: run directory {tracker.run_dir}", file=sys.stderr)
    try:
        _run(argv)
    except BaseException:
        if auto is not None:
            say_at_end(auto)  # before the exception's hook finishes the run with it
        raise


def _run(argv: list[str]) -> None:
    if argv[0] == "-m" and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = Path(argv[0])
    sys.argv = list(argv)
    sys.path[0] = str(script.resolve().parent)  # as `python SCRIPT` has it
    runpy.run_path(str(script), run_name="__main__")


def _module_found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or not a module name at all
        return False


if __name__ == "__main__":
    main(sys.argv[1:])
