"""The plan of the house, checked: which room may import which (DESIGN.md §1 and §1b).

- The app never loads torch or pandas at startup; its door into the core is profiler_core.api (plus render/).
- Runner code (everything under profiler_core/runner/) never imports textual, pandas or rich, and nothing
  outside it imports it: other processes start it with `python -m` command lines.
- The orchestration side (session, api) loads neither torch nor pandas when imported.
- No import cycles among the project's modules (module-level imports).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("models", "profiler_core", "tui")
ROOT_PACKAGE = "sysprof"


def module_name(path: Path) -> str:
    """The name a source file installs as: every folder maps under the one import root (setup.py)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join((ROOT_PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)))


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def imported_names(path: Path, top_level_only: bool) -> set[str]:
    """Modules named by import statements (all of them, or those that run when the module is imported)."""
    tree = ast.parse(path.read_text())
    nodes = _top_level_imports(tree) if top_level_only else ast.walk(tree)
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _top_level_imports(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue  # only for the type checker: never runs
        yield from (n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))


def loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-500:]
    return {name.split(".")[0] for name in result.stdout.split()}


@pytest.mark.parametrize("module, banned", [
    ("sysprof.tui.app", {"torch", "pandas"}),
    ("sysprof.profiler_core.api", {"torch", "pandas", "textual"}),
    ("sysprof.profiler_core.session.passes", {"torch", "pandas", "textual"}),
    ("sysprof.profiler_core.cli.main", {"torch", "textual"}),
])
def test_startup_imports_stay_light(module, banned):
    assert not loaded_after_import(module) & banned


def test_runner_side_imports_no_ui_or_tables():
    runner = [name for name in project_modules() if name.startswith("sysprof.profiler_core.runner")
              and not name.endswith("__main__")]
    assert not loaded_after_import(", ".join(runner)) & {"textual", "pandas", "rich"}


def test_only_the_runner_imports_the_runner():
    offenders = [name for name, path in project_modules().items() if not name.startswith("sysprof.profiler_core.runner")
                 and any(n.startswith("sysprof.profiler_core.runner") for n in imported_names(path, top_level_only=False))]
    assert offenders == []


def test_the_app_enters_the_core_through_api_and_render():
    allowed = ("sysprof.profiler_core.api", "sysprof.profiler_core.render")
    offenders = {name: sorted(n for n in imported_names(path, top_level_only=False)
                              if n.startswith(("sysprof.profiler_core", "sysprof.models")) and not n.startswith(allowed))
                 for name, path in project_modules().items() if name.startswith("sysprof.tui")}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_no_import_cycles():
    modules = project_modules()
    graph = {name: {n for n in imported_names(path, top_level_only=True) if n in modules and n != name}
             for name, path in modules.items()}
    cycle = find_cycle(graph)
    assert cycle is None, " → ".join(cycle or [])


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in the graph as a path that returns to its start, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    for start in graph:
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return path[path.index(following):] + [following]
            elif not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
