"""`sysprof study passes`: forward against forward+backward from the same steps, per model and context."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from sysprof.profiler_core.base.options import config_from_args
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import (
    StudyKind,
    Tables,
    add_model_grid_options,
    grid_axes,
    models_and_ctxs,
    run_configs,
)


def run(args: argparse.Namespace) -> Path:
    base = config_from_args(args)
    configs = [dataclasses.replace(cfg, mode="forward_backward") for cfg in models_and_ctxs(args, base)]
    return run_configs(args, "passes", configs, grid_axes(configs))


def tables(study: Study) -> Tables:
    from sysprof.profiler_core.studies.derived import passes_table

    return {"forward vs forward+backward (same steps)": passes_table(study.rows)}


KIND = StudyKind(
    "passes", "forward vs forward+backward with their ratio, per model and ctx", add_model_grid_options, run, tables,
    order=10, templates={"forward vs forward+backward: every size": "study passes --models small,medium,large,xl,2.7B"},
    cpu_templates={"forward vs forward+backward (CPU)":
                   "study passes --models tiny --device cpu --ctxs 32,64 --steps 3"})
