"""`sysprof ab`: is B faster than A on this node? Both configs run in fresh processes, interleaved in time
(A B B A A B …), so that whatever drifts on a shared node (clocks, other tenants, warm caches) hits both alike;
then the comparison is printed as `sysprof compare` prints it.

The pair is a sweep of two cells (studies/sweep.py: its round-robin reverses every other round), kept in a study
directory like any sweep: `sysprof compare` of its two cells, `sysprof export` of its tables and the app's Studies
and Runs screens read it later.
"""
from __future__ import annotations

import argparse
import copy
import shlex
import time
from typing import cast

from sysprof.profiler_core.analysis.compare import compare_summaries, config_differences
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.errors import ConfigError, UsageError
from sysprof.profiler_core.base.options import OneLineParser, add_config_options, config_from_args
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.cli.compare import add_min_effect_option, print_comparison
from sysprof.profiler_core.documents.study_plans import AB_STUDY
from sysprof.profiler_core.render.whole_tables import add_format_option
from sysprof.profiler_core.session.backends import choose_backend
from sysprof.profiler_core.session.rank_checks import gpus_problem
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.progress import Progress

DEFAULT_REPEATS = 4  # two rounds of A B B A: the fewest that pair every process of A with one of B on each side


def add_ab_options(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.set_defaults(repeats=DEFAULT_REPEATS)
    parser.add_argument("--a", required=True, metavar="OPTIONS", help='run options of A over the shared ones, e.g. '
                        '"--optimizer-impl foreach"; a lone flag with = (--a=--compile)')
    parser.add_argument("--b", required=True, metavar="OPTIONS", help='run options of B, e.g. "--optimizer-impl fused"')
    add_min_effect_option(parser)
    parser.add_argument("--runs-dir", help="where the pair's study directory goes (default: ./runs)")
    parser.add_argument("--nsys", help="the nsys binary, where a side profiles (default: $SYSPROF_NSYS, then PATH)")
    parser.add_argument("--events", action="store_true", help="JSON lines of progress on stdout")
    parser.add_argument("--json", action="store_true", help="the comparison as JSON")
    add_format_option(parser)


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
    cfg_a, cfg_b = side_config(args, args.a, "a"), side_config(args, args.b, "b")
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


def command_ab(args) -> int:
    cfg_a, cfg_b = ab_configs(args)
    differences = config_differences(cfg_a.to_dict(), cfg_b.to_dict())
    study_dir = sweep.create(rundir.runs_root(args.runs_dir), "ab", [cfg_a, cfg_b], sorted(differences), AB_STUDY)
    started = time.perf_counter()
    with Progress(args.events).recorded(study_dir) as progress:
        summary_a, summary_b = sweep.run(study_dir, progress.sweep_listener("ab", study_dir), args.nsys)
    for side, summary in (("A", summary_a), ("B", summary_b)):
        if summary.get("status") not in events.DONE_STATUSES or not summary.get("phases"):
            raise UsageError(f"{side} did not finish ({summary.get('status')}): see {study_dir}")
    rows = compare_summaries(summary_a, summary_b, args.min_effect)
    paths = [sweep.cell_dir(study_dir, index, cfg) for index, cfg in enumerate((cfg_a, cfg_b))]
    print_comparison(args, (paths[0], cast("RunSummary", summary_a)), (paths[1], cast("RunSummary", summary_b)),
                     rows, differences)
    if not args.json:
        print(f"{time.perf_counter() - started:.0f} s · study directory: {study_dir}")
    return 0
