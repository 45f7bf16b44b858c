"""`sysprof study compile`: eager against torch.compile for the forward, the train step and its
backward+optimizer, with the compile time and whether compiled is faster beyond noise."""
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
    configs = [dataclasses.replace(cfg, mode=mode, compile=compiled,
                                   compile_mode=base.compile_mode if compiled else "default")
               for cfg in models_and_ctxs(args, base) for mode in ("forward", "train") for compiled in (False, True)]
    return run_configs(args, "compile", configs, grid_axes(configs, "mode", "compile"))


def tables(study: Study) -> Tables:
    from sysprof.profiler_core.studies.derived import compile_table

    return {"torch.compile study": compile_table(study.rows, study.summaries)}


KIND = StudyKind(
    "compile", "eager vs torch.compile: forward, train step, backward+optimizer", add_model_grid_options, run, tables,
    order=30,
    templates={"torch.compile study: eager vs compiled": "study compile --models small,medium --ctxs 256,512"})
