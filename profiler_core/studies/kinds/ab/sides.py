"""A and B: the shared run options with each side's over them, checked before anything runs."""
from __future__ import annotations

import argparse
import copy
import shlex

from sysprof.profiler_core.analysis.compare import config_differences
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.errors import ConfigError, UsageError
from sysprof.profiler_core.base.options import OneLineParser, add_config_options, config_from_args
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.session.backends import choose_backend
from sysprof.profiler_core.session.rank_checks import gpus_problem

DEFAULT_REPEATS = 4  # two rounds of A B B A: the fewest that pair every process of A with one of B on each side


def add_side_options(parser: argparse.ArgumentParser) -> None:
    """The shared run options (each side's go over them), the two sides, and the nsys binary."""
    add_config_options(parser)
    parser.set_defaults(repeats=DEFAULT_REPEATS)
    parser.add_argument("--a", required=True, metavar="OPTIONS", help='run options of A over the shared ones, e.g. '
                        '"--optimizer-impl foreach"; a lone flag with = (--a=--compile)')
    parser.add_argument("--b", required=True, metavar="OPTIONS", help='run options of B, e.g. "--optimizer-impl fused"')
    parser.add_argument("--nsys", help="the nsys binary, where a side profiles (default: $SYSPROF_NSYS, then PATH)")


def side_config(shared: argparse.Namespace, options: str, side: str) -> RunConfig:
    """The shared options with one side's over them (argparse keeps what the namespace already holds)."""
    parser = OneLineParser(prog=f"sysprof ab --{side}", add_help=False, allow_abbrev=False)  # no guessed option
    add_config_options(parser)
    try:
        tokens = shlex.split(options)
    except ValueError as exc:
        raise UsageError(f"--{side}: {exc}") from None
    own, unknown = parser.parse_known_args(tokens, namespace=copy.deepcopy(shared))  # append options: lists
    if unknown:
        raise UsageError(f"--{side}: not a run option: {' '.join(unknown)}")
    cfg = config_from_args(own)
    try:
        validate(cfg)
    except ConfigError as exc:
        raise ConfigError(f"--{side}: {exc}") from None
    return cfg


def ab_configs(args: argparse.Namespace) -> tuple[RunConfig, RunConfig]:
    """A and B, each checked; one line and nothing run when the pair cannot give an answer."""
    if args.repeats < 2:
        raise UsageError(f"--repeats {args.repeats}: ab needs at least 2 processes per side (the spread between "
                         f"processes is what a verdict is judged against); the default is {DEFAULT_REPEATS}")
    shared = validate(config_from_args(args))  # a shared option's problem is no side's fault
    cfg_a, cfg_b = side_config(args, args.a, "a"), side_config(args, args.b, "b")
    for side, cfg in (("", shared), ("--a: ", cfg_a), ("--b: ", cfg_b)):
        too_big = None if getattr(args, "force", False) else fit_problem(cfg, device_memory(cfg.device))
        if too_big:
            raise UsageError(f"{side}{too_big}")
    if min(cfg_a.repeats, cfg_b.repeats) < 2:
        raise UsageError("a side's --repeats below 2: ab needs at least 2 processes per side; set --repeats once, "
                         "for both")
    if not config_differences(cfg_a.to_dict(), cfg_b.to_dict()):
        raise UsageError(f"A and B are the same config ({args.a!r} and {args.b!r} change nothing the measured "
                         "steps run: profiler, memory and repeats only shape the later passes)")
    for problem in filter(None, map(gpus_problem, (cfg_a, cfg_b))):
        raise UsageError(problem)
    for cfg in (cfg_a, cfg_b):
        choose_backend(cfg.profiler, args.nsys)
    return cfg_a, cfg_b
