"""How the tool starts Python processes of its own: `python -P -m MODULE`.

`python -m` puts the working directory first on the module path, and users run from their repositories: a
`json.py`, `concurrent.py` or `queue.py` there would be imported in place of the standard library's, inside the
runner. `-P` (Python 3.11+) leaves the working directory off; the tool imports from its install, the user's factory
is found by its own path (runner/user_model.py), and a `package.module` spec from the working directory is looked
up after everything else."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

SAFE_PATH = "-P"


def python_module(module: str) -> list[str]:
    return [sys.executable, SAFE_PATH, "-m", module]


# Processes that import torch start through this entry: it forks them from a process that imported torch already
# when one is ready (runner/warm_start.py), and runs them itself otherwise.
WARM_START = "sysprof.profiler_core.runner.warm_start"
STAND_IN_FOLDER = "stand-ins"  # in warm_folder(): one file per forked process, named by its pid, holding its stand-in's


def torch_module(module: str) -> list[str]:
    """`python -P -m MODULE`, through the warm start."""
    return [*python_module(WARM_START), module]


def warm_folder() -> Path:
    """Where this user's warm-start servers keep their sockets, logs and stand-in files."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"sysprof-warm-{os.getuid()}"


def stand_in_of(pid: int) -> int | None:
    """The pid of the process that stands in for a forked one (its launcher waits for that one), None if pid was
    not forked by a warm-start server."""
    try:
        return int((warm_folder() / STAND_IN_FOLDER / str(pid)).read_text())
    except (OSError, ValueError):
        return None
