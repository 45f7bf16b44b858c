"""The plan of the house, checked: which room may import which (DESIGN.md §1 and §1b).

- Floors: every import, relative ones and those inside functions included, goes to its own floor or one below
  (LAYERS, lowest first). The runner is imported by nothing: other processes start it with `python -m`.
- The app never loads torch or pandas at startup; its door into the core is profiler_core.api (plus render/ and
  the units, a leaf).
- Runner code (everything under profiler_core/runner/) never imports textual, pandas or rich.
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
PACKAGES = ("models", "profiler_core", "trace", "tui")
ROOT_PACKAGE = "sysprof"
CORE, RUNNER = f"{ROOT_PACKAGE}.profiler_core", f"{ROOT_PACKAGE}.profiler_core.runner"
TRACE = f"{ROOT_PACKAGE}.trace"  # what runs in the user's own training process: it may use the runner's parts

# The floors, lowest first: one per folder, no exceptions. A module imports from its own floor or those below it.
# The core's top level holds only its package, its `python -m` entry and the door (api): they are the cli floor.
LAYERS = ("models", "base", "analyzers", "documents", "tables", "render", "session", "trace", "studies", "cli",
          "tui")
FLOOR_OF_FOLDER = {f"{ROOT_PACKAGE}.models": "models", f"{ROOT_PACKAGE}.tui": "tui",
                   # the tracker runs inside the user's training process, as the runner runs in its own
                   f"{ROOT_PACKAGE}.trace": "trace",
                   f"{CORE}.base": "base",
                   f"{CORE}.analysis": "analyzers", f"{CORE}.kernels": "analyzers", f"{CORE}.memory": "analyzers",
                   f"{CORE}.readers": "analyzers",
                   f"{CORE}.documents": "documents", f"{CORE}.tables": "tables", f"{CORE}.render": "render",
                   f"{CORE}.session": "session", f"{CORE}.studies": "studies", f"{CORE}.cli": "cli",
                   f"{CORE}.door": "cli",  # the services api.py hands out
                   # the runner may use what a run's files are made of, never what orchestrates or shows them
                   RUNNER: "analyzers"}
TOP_LEVEL = {CORE, f"{CORE}.api", f"{CORE}.__main__"}


def floor(module: str) -> str:
    for prefix, name in FLOOR_OF_FOLDER.items():
        if module == prefix or module.startswith(prefix + "."):
            return name
    assert module in TOP_LEVEL, f"{module} is loose in the core: put it in a floor's folder"
    return "cli"


def module_name(path: Path) -> str:
    """The name a source file installs as: every folder maps under the one import root (setup.py)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join((ROOT_PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)))


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def imported_names(path: Path, top_level_only: bool) -> set[str]:
    """Modules named by import statements (all of them, or those that run when the module is imported), relative
    ones resolved to their full names."""
    tree = ast.parse(path.read_text())
    nodes = _top_level_imports(tree) if top_level_only else ast.walk(tree)
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module_name(path), path.name == "__init__.py", node)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level_imports(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue  # only for the type checker: never runs
        yield from (n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))


def project_imports() -> dict[str, set[str]]:
    """Each module's imports of the project's modules (a name imported from a module counts as that module)."""
    modules = project_modules()
    return {name: {_owning_module(n, modules) for n in imported_names(path, top_level_only=False)
                   if n.startswith(ROOT_PACKAGE + ".")} - {name} for name, path in modules.items()}


def _owning_module(name: str, modules: dict[str, Path]) -> str:
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def floor_violations(imports: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in imports.items():
        for target in targets:
            if target.startswith(RUNNER) and not module.startswith((RUNNER, TRACE)):
                found.append(f"{module} imports the runner ({target})")
            elif LAYERS.index(floor(target)) > LAYERS.index(floor(module)):
                found.append(f"{module} ({floor(module)}) imports {target} ({floor(target)})")
    return sorted(found)


def test_every_import_goes_to_its_own_floor_or_below():
    assert floor_violations(project_imports()) == []


def test_every_import_names_the_one_import_root():
    """`import models` would work from the repository's root and break in an installed wheel (setup.py)."""
    bare = {name: sorted(n for n in imported_names(path, top_level_only=False) if n.split(".")[0] in PACKAGES)
            for name, path in project_modules().items()}
    assert {name: found for name, found in bare.items() if found} == {}


def test_the_floor_check_sees_relative_and_runner_imports():
    """The rule is not vacuous: a relative import up a floor and an import of the runner are both caught."""
    memory = ROOT / "profiler_core" / "memory" / "fit.py"
    node = ast.parse("from ..render import rows").body[0]
    assert isinstance(node, ast.ImportFrom)
    upward = _absolute(module_name(memory), False, node)
    assert upward == f"{CORE}.render"
    assert floor_violations({f"{CORE}.memory.fit": {f"{CORE}.render.rows"},
                             f"{CORE}.session.passes": {f"{RUNNER}.engine"},
                             f"{CORE}.cli.main": {f"{CORE}.studies.sweep", f"{CORE}.api"}}) == [
        f"{CORE}.memory.fit (analyzers) imports {CORE}.render.rows (render)",
        f"{CORE}.session.passes imports the runner ({RUNNER}.engine)"]


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


@pytest.mark.slow
def test_runner_side_imports_no_ui_or_tables():
    runner = [name for name in project_modules() if name.startswith("sysprof.profiler_core.runner")
              and not name.endswith("__main__")]
    assert not loaded_after_import(", ".join(runner)) & {"textual", "pandas", "rich"}


def test_the_apps_models_load_no_textual():
    """tui/model/ is what the screens show, computed as plain data: testable and reusable without the app."""
    models = [name for name in project_modules() if name.startswith(f"{ROOT_PACKAGE}.tui.model.")]
    assert models and "textual" not in loaded_after_import(", ".join(models))


def test_the_app_enters_the_core_through_api_tables_and_render():
    allowed = (f"{CORE}.api", f"{CORE}.tables", f"{CORE}.render", f"{CORE}.base.units")
    offenders = {name: sorted(n for n in imported_names(path, top_level_only=False)
                              if n.startswith(("sysprof.profiler_core", "sysprof.models"))
                              and not n.startswith(allowed))
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


def test_the_cores_top_level_holds_only_its_entry_and_door():
    """Everything else lives in a floor's folder, so where a module sits says what it may import."""
    loose = sorted(path.name for path in (ROOT / "profiler_core").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "api.py"]


def _used_by_the_app() -> set[str]:
    """Names the app takes from the door: `name` imported from api, and `service.name` read off a service."""
    used: set[str] = set()
    for name, path in project_modules().items():
        if not name.startswith(f"{ROOT_PACKAGE}.tui"):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == f"{CORE}.api":
                used.update(alias.name for alias in node.names)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                used.add(f"{node.value.id}.{node.attr}")
    return used


def test_the_door_is_small_and_every_name_in_it_has_a_user():
    """api.py hands out at most 35 names; each, and each name a service module hands out, is used by the app."""
    from sysprof.profiler_core import api

    used = _used_by_the_app()
    assert len(api.__all__) <= 35
    assert sorted(set(api.__all__) - used) == []
    services = [name for name in api.__all__ if name.islower() and name != "events"]
    unused = [f"{service}.{name}" for service in services for name in getattr(api, service).__all__
              if f"{service}.{name}" not in used]
    assert unused == []


def test_the_app_names_no_file_of_a_run_directory():
    """Which file holds what is the core's to know: the app never touches rundir."""
    offenders = [name for name, path in project_modules().items()
                 if name.startswith(f"{ROOT_PACKAGE}.tui") and "rundir" in path.read_text()]
    assert offenders == []
