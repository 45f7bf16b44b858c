"""`sysprof study warmup`: 0/1/2/5 warm-up steps side by side, the first-step penalty and the spread."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from sysprof.profiler_core.base.config import MODES
from sysprof.profiler_core.base.options import config_from_args
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import (
    StudyKind,
    Tables,
    add_model_grid_options,
    choices,
    grid_axes,
    ints,
    models_and_ctxs,
    run_configs,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_grid_options(parser)
    parser.add_argument("--warmups", default="0,1,2,5", help="comma-separated warm-up step counts (default 0,1,2,5)")
    parser.add_argument("--modes", help="comma-separated modes side by side, e.g. forward,forward_backward "
                                        "(default: --mode's)")


def run(args: argparse.Namespace) -> Path:
    base = config_from_args(args)
    modes = choices(args.modes or base.mode, "--modes", MODES)
    configs = [dataclasses.replace(cfg, warmup=w, mode=mode) for cfg in models_and_ctxs(args, base)
               for w in ints(args.warmups, "--warmups") for mode in modes]
    return run_configs(args, "warmup", configs, grid_axes(configs, "warmup", "mode"))


def tables(study: Study) -> Tables:
    from sysprof.profiler_core.studies.derived import warmup_table

    return {"warm-up study": warmup_table(study.rows)}


KIND = StudyKind(
    "warmup", "0/1/2/5 warm-up steps: first-step penalty and spread", add_arguments, run, tables, order=20,
    templates={"warm-up study: 0/1/5 warm-up, FWD and FWD+BWD": "study warmup --models small,medium --ctxs 128,512 "
                                                                "--warmups 0,1,5 --modes forward,forward_backward"},
    cpu_templates={"warm-up study (CPU)": "study warmup --model tiny --device cpu --ctx 64 --steps 5"})
