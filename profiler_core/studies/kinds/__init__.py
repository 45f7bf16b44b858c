"""The registry of study kinds: every module in this folder that defines KIND (a studies.kind.StudyKind) is one, and
every package whose `study` module does. `sysprof study`, the results tables, export and the Studies screen iterate
KINDS, so a new kind is one new module (or package) here, and its test. Modules load at import, so a kind keeps
pandas and torch out of its top level."""
from __future__ import annotations

import importlib
import pkgutil

from sysprof.profiler_core.studies.kind import StudyKind


def _discover() -> dict[str, StudyKind]:
    """Each module's KIND, and each package's from its `study` module (a package's __init__ imports nothing: its
    modules import each other, never the package)."""
    found = [importlib.import_module(f"{__name__}.{module.name}{'.study' if module.ispkg else ''}").KIND
             for module in pkgutil.iter_modules(__path__)]
    return {kind.name: kind for kind in sorted(found, key=lambda kind: (kind.order, kind.name))}


KINDS: dict[str, StudyKind] = _discover()
