"""What a Python file defines at its top level, read with `ast`: the file is parsed, never imported, so picking a
model factory in the app cannot run the user's code (importing it is the runner's job, in its own process)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


class ScanError(ValueError):
    """A file that cannot be read or parsed; the message is one line naming it."""


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str  # "class" or "function"
    line: int
    parameters: tuple[str, ...]  # what the factory is called with: a function's, or a class's __init__ less self
    bases: str = ""  # a class's bases as written, e.g. "nn.Module"


def _parameters(arguments: ast.arguments, skip_self: bool) -> tuple[str, ...]:
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)][1 if skip_self else 0:]
    star = [f"*{arguments.vararg.arg}"] if arguments.vararg else []
    keywords = [a.arg for a in arguments.kwonlyargs]
    double_star = [f"**{arguments.kwarg.arg}"] if arguments.kwarg else []
    return tuple(positional + star + keywords + double_star)


def _class_parameters(node: ast.ClassDef) -> tuple[str, ...]:
    """Its __init__'s parameters; for a class without one (a dataclass, say), its annotated fields."""
    init = next((item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
    if init is not None:
        return _parameters(init.args, skip_self=True)
    return tuple(item.target.id for item in node.body
                 if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))


def top_level_definitions(path: Path) -> list[Definition]:
    """Classes and functions defined at the file's top level, in file order."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except OSError as exc:
        raise ScanError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ScanError(f"{path} is not a text file") from None
    except SyntaxError as exc:
        raise ScanError(f"{path.name} line {exc.lineno}: {exc.msg} (it would not import either)") from None
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(base) for base in node.bases)
            found.append(Definition(node.name, "class", node.lineno, _class_parameters(node), bases))
        elif isinstance(node, ast.FunctionDef):  # not async: a factory is called, not awaited
            found.append(Definition(node.name, "function", node.lineno, _parameters(node.args, skip_self=False)))
    return found


def factory_spec(path: Path, name: str) -> str:
    """`file.py:name` for --model-factory: relative to the working folder when inside it (the runner starts there,
    and the field stays short), else absolute."""
    resolved = path.resolve()
    try:
        shown = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        shown = resolved
    return f"{shown}:{name}"
