"""Sweeps and studies: which a directory holds, those under a runs root, their templates and their tables."""
from __future__ import annotations

from pathlib import Path

from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.studies.catalog import study_record
from sysprof.profiler_core.tables.model import TableModel

__all__ = ["study_kind", "study_record", "study_models", "study_templates"]


def study_templates(on_gpu: bool) -> dict[str, str]:
    """Each study kind's templates for the app's list (title → command), sized for a GPU node or a CPU."""
    from sysprof.profiler_core.studies.kinds import KINDS

    return {title: command for kind in KINDS.values()
            for title, command in (kind.templates if on_gpu else kind.cpu_templates).items()}


def study_models(study_dir: Path) -> list[TableModel]:
    """A study's tables rebuilt from its directory, each with its figures (pandas: call it from a worker thread)."""
    from sysprof.profiler_core.studies.table_models import study_models as build

    return build(study_dir)
