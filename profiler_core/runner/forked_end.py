"""How a process a warm-start server forked ends: as the interpreter would end it, less the part that frees every
module and object one by one. That part costs a process that imported torch about 0.7 s of CPU
(docs/performance.md#warm-start) and frees nothing the kernel would not. Only forked processes end this way: no
tool that writes its data when the process exits (nsys) is injected in one (warm_start.wanted)."""
from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn

from sysprof.profiler_core.runner.warm_start import run_as_main


def run_and_end(module: str) -> NoReturn:
    """MODULE run as main, then what the interpreter's own end does first: non-daemon threads joined, exit handlers
    run, the standard streams flushed; then the process ends with its exit code."""
    try:
        run_as_main(module)
        code = 0
    except SystemExit as end:
        code = exit_code(end.code)
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter's own end calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]  # a stream that is None raises and is passed over
    os._exit(code)


def exit_code(code: object) -> int:
    """The exit code the interpreter gives for `sys.exit(code)`: a message is printed and counts as 1."""
    if code is None or isinstance(code, int):
        return int(code or 0)
    print(code, file=sys.stderr)
    return 1
