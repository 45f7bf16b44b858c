"""Whether the user's code a config names can be found, told without importing it.

`--model-factory`, `--loss` and `--optimizer` name a file (`path/to/file.py:name`) or a module (`package.module:name`,
`package.module.Class`). Importing them is the runner's job: only it may run the user's code. But that a file is
missing or a top-level package is not installed is known here, in a millisecond, so a run, every cell of a sweep or
study, and the app's Run button are refused before anything starts. Whether the attribute exists, and what the code
does when it runs, stays the runner's to find out.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path


def optimizer_target(spec: str) -> tuple[str, str]:
    """(module or file, attribute) of an optimizer spec: `module:Class`, `file.py:Class` or `module.Class`."""
    if ":" in spec:
        target, _, name = spec.rpartition(":")
        return target, name
    target, _, name = spec.rpartition(".")
    return target, name


def optimizer_problem(spec: str) -> str | None:
    """The shape of --optimizer, then whether its module or file is there."""
    target, name = optimizer_target(spec)
    if not (target and name.isidentifier()):
        return f"--optimizer takes package.module.Class, package.module:Class or file.py:Class; got {spec!r}"
    return target_problem("--optimizer", target)


def callable_problem(option: str, spec: str | None) -> str | None:
    """Whether the module or file of a `target:name` spec (already well formed) is there."""
    if spec is None:
        return None
    return target_problem(option, spec.rpartition(":")[0])


def target_problem(option: str, target: str) -> str | None:
    if target.endswith(".py"):
        path = Path(target).expanduser()
        return None if path.is_file() else f"{option}: no such file {target}"
    top = target.split(".")[0]
    if not top.isidentifier():
        return f"{option}: {target!r} is not a module name"
    if _module_found(top):
        return None
    return f"{option}: no module named {top!r} (is it installed or on PYTHONPATH?)"


def _module_found(name: str) -> bool:
    """Found as the runner would find it: it starts as `python -m`, so the working directory is on its path."""
    if name in sys.modules or name in sys.builtin_module_names:
        return True
    try:
        if importlib.util.find_spec(name) is not None:  # a top-level name: located, not executed
            return True
    except (ImportError, ValueError):
        return False
    return importlib.machinery.PathFinder.find_spec(name, [os.getcwd()]) is not None
