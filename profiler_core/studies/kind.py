"""What a study kind is, and the planning pieces the kinds share (studies/kinds/ holds one module per kind).

A kind names itself, adds its arguments to `sysprof study NAME`, plans and runs its cells (everything validated
before the first one starts) and rebuilds its tables from its directory; the app lists its templates. The CLI,
the results tables and the Studies screen iterate the registry (studies/kinds/__init__.py), so none of them
names a kind.
"""
from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.options import add_config_options, comma_items
from sysprof.profiler_core.memory.fit import cells_fit_problem
from sysprof.profiler_core.session.rank_checks import gpus_problem
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.progress import Progress, config_label

Tables = dict[str, list[dict]]  # title → records, the main table first


@dataclass(frozen=True)
class StudyKind:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Path]  # plans, validates every cell, runs them; the study's directory
    tables: Callable[[Study], Tables]  # from the study loaded once (pandas may load: not at app startup)
    templates: Mapping[str, str] = field(default_factory=dict)  # the app's list on a GPU node: title → command
    cpu_templates: Mapping[str, str] = field(default_factory=dict)  # the same, sized for a CPU
    order: int = 100  # place in `sysprof study --help` and in the app's list
    sweep_cells: bool = True  # its cells are sweep cells: a "cells" table follows, `sweep --resume` continues it


def add_model_grid_options(parser: argparse.ArgumentParser) -> None:
    """The options of `sysprof run`, plus --models and --ctxs: the grid a model study repeats its cells over."""
    add_config_options(parser)
    parser.add_argument("--models", help="comma-separated presets, e.g. small,medium,large,xl,2.7B "
                                         "(default: --model's)")
    parser.add_argument("--ctxs", help="comma-separated context lengths (default: --ctx's)")


def models_and_ctxs(args: argparse.Namespace, base: RunConfig) -> list[RunConfig]:
    """--models × --ctxs over the base config: the grid every model study repeats its cells over."""
    models = choices(base.model if args.models is None else args.models, "--models", tuple(PRESETS) + ("custom",))
    ctxs = [base.ctx] if args.ctxs is None else positive_ints(args.ctxs, "--ctxs")
    return [dataclasses.replace(base, model=model, ctx=ctx) for model in models for ctx in ctxs]


def grid_axes(configs: list[RunConfig], *fields: str) -> list[str]:
    """What varies among the cells, for the sweep plan."""
    return [f for f in ("model", "ctx", *fields) if len({getattr(c, f) for c in configs}) > 1]


def run_configs(args: argparse.Namespace, name: str, configs: list[RunConfig], varied: list[str],
                before_run: Callable[[Path], None] | None = None) -> Path:
    """Every cell validated (its memory fit too, unless --force), then a sweep directory of study `name` run cell by
    cell; its directory."""
    for cfg in configs:
        validate(cfg)
    device = next(filter(None, map(gpus_problem, configs)), None)
    if device:
        raise ConfigError(device)
    too_big = None if args.force else cells_fit_problem(configs, lambda cfg: config_label(cfg.to_dict()))
    if too_big:
        raise ConfigError(too_big)
    sweep_dir = sweep.create(rundir.runs_root(args.runs_dir), name, configs, varied, study=name)
    if before_run:
        before_run(sweep_dir)
    with Progress(args.events).recorded(sweep_dir) as progress:
        sweep.run(sweep_dir, progress.sweep_listener(name, sweep_dir))
    return sweep_dir


def ints(text: str, option: str, least: int = 0) -> list[int]:
    """Comma-separated integers, each at least `least`; the message says the bound the option keeps."""
    bound = "positive integers" if least == 1 else f"integers ≥ {least}"
    try:
        values = [int(item) for item in comma_items(text, option)]
    except ValueError:
        raise ConfigError(f"{option} takes comma-separated {bound}; got {text!r}") from None
    if min(values) < least:
        raise ConfigError(f"{option} takes comma-separated {bound}; got {text!r}")
    return values


def positive_ints(text: str, option: str) -> list[int]:
    return ints(text, option, least=1)


def positive(text: str, option: str) -> int:
    values = ints(text, option)
    if len(values) != 1 or values[0] <= 0:
        raise ConfigError(f"{option} takes one positive integer; got {text!r}")
    return values[0]


def choices(text: str, option: str, allowed: tuple[str, ...]) -> list[str]:
    chosen = comma_items(text, option)
    unknown = [item for item in chosen if item not in allowed]
    if unknown or not chosen:
        raise ConfigError(f"{option}: {'unknown value ' + repr(unknown[0]) if unknown else 'no value'} "
                          f"(choose from {', '.join(allowed)})")
    return list(dict.fromkeys(chosen))
