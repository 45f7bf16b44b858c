"""Packages whose names load on first use: importing the package costs nothing until a name is asked for."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module-level __getattr__ that imports `package.<exports[name]>` when `name` is first used."""
    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
    return __getattr__
