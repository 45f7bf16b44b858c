"""How the tool starts Python processes of its own: `python -P -m MODULE`.

`python -m` puts the working directory first on the module path, and users run from their repositories: a
`json.py`, `concurrent.py` or `queue.py` there would be imported in place of the standard library's, inside the
runner. `-P` (Python 3.11+) leaves the working directory off; the tool imports from its install, the user's factory
is found by its own path (runner/user_model.py), and a `package.module` spec from the working directory is looked
up after everything else."""
from __future__ import annotations

import sys

SAFE_PATH = "-P"


def python_module(module: str) -> list[str]:
    return [sys.executable, SAFE_PATH, "-m", module]
