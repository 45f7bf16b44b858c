"""Whether the user's code a config names can be found, told without importing it.

`--model-factory`, `--loss` and `--optimizer` name a file (`path/to/file.py:name`) or a module (`package.module:name`,
`package.module.Class`). Importing them is the runner's job: only it may run the user's code. But that a file is
missing or a top-level package is not installed is known here, in a millisecond, so a run, every cell of a sweep or
study, and the app's Run button are refused before anything starts. Whether the attribute exists, and what the code
does when it runs, stays the runner's to find out.
"""
from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

COMPILED_PREFIX = "compiled:"  # `--impl compiled:file.py:fn`: torch.compile of the user's attention function


def short_spec(spec: str) -> str:
    """A user's code as its file and name ("compiled:mine.py:attn"): the folders would fill a legend or a header."""
    compiled = COMPILED_PREFIX if spec.startswith(COMPILED_PREFIX) else ""
    where, colon, name = spec.removeprefix(COMPILED_PREFIX).rpartition(":")
    return f"{compiled}{where.rsplit('/', 1)[-1]}:{name}" if colon else spec


def short_specs(specs: set[str]) -> dict[str, str]:
    """Each spec's short_spec, or every spec whole where two would share a short name (two mine.py in two folders)."""
    short = {spec: short_spec(spec) for spec in specs}
    return short if len(set(short.values())) == len(short) else {spec: spec for spec in specs}


def optimizer_target(spec: str) -> tuple[str, str]:
    """(module or file, attribute) of an optimizer spec: `module:Class`, `file.py:Class` or `module.Class`."""
    if ":" in spec:
        target, _, name = spec.rpartition(":")
        return target, name
    target, _, name = spec.rpartition(".")
    return target, name


def optimizer_shape_problem(spec: object) -> str | None:
    if not isinstance(spec, str):
        return None  # the type check says it
    target, name = optimizer_target(spec)
    if not (target and name.isidentifier()):
        return f"--optimizer takes package.module.Class, package.module:Class or file.py:Class; got {spec!r}"
    return None


def code_location_problems(cfg: Any) -> dict[str, str]:
    """Per field, the user code that is not there (specs already well formed). The runner puts a factory file's
    folder on its path before it loads the loss and the optimizer, so their modules are looked for there too."""
    factory = cfg.model_factory.rpartition(":")[0] if cfg.model_factory else ""
    beside = [str(Path(factory).expanduser().resolve().parent)] if factory.endswith(".py") else []
    found = {"model_factory": factory and target_problem("--model-factory", factory),
             "loss": cfg.loss and target_problem("--loss", cfg.loss.rpartition(":")[0], beside),
             "optimizer": target_problem("--optimizer", optimizer_target(cfg.optimizer)[0], beside)}
    return {name: problem for name, problem in found.items() if problem}


def target_problem(option: str, target: str, beside: list[str] | None = None) -> str | None:
    if target.endswith(".py"):
        path = Path(target).expanduser()
        return None if path.is_file() else f"{option}: no such file {target}"
    top = target.split(".")[0]
    if not top.isidentifier():
        return f"{option}: {target!r} is not a module name"
    if _module_found(top, beside or []):
        return None
    return f"{option}: no module named {top!r} (is it installed or on PYTHONPATH?)"


def name_problem(option: str, target: str, name: str) -> str | None:
    """A file.py's top level without `name` (read, not run): the whole study would fail cell by cell. Left to the
    import where the file could make names itself (a star import, a module __getattr__, globals())."""
    if not target.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(target).expanduser().read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None  # the import says it better, with its line
    defined = {found for node in tree.body for found in _names_bound(node)}
    dynamic = "*" in defined or "__getattr__" in defined or "globals" in {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    if dynamic or name in defined:
        return None
    functions = sorted(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return f"{option}: {target} defines no {name!r} (its functions: {', '.join(functions) or 'none'})"


def _names_bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]


def _module_found(name: str, beside: list[str]) -> bool:
    """Found as the runner would find it: it starts as `python -m`, so the working directory is on its path."""
    if name in sys.modules or name in sys.builtin_module_names:
        return True
    try:
        if importlib.util.find_spec(name) is not None:  # a top-level name: located, not executed
            return True
    except (ImportError, ValueError):
        return False
    return importlib.machinery.PathFinder.find_spec(name, [os.getcwd(), *beside]) is not None
