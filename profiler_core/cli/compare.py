"""`sysprof compare`: B against A, phase by phase and tokens/s, with when each side's processes ran
(ordering.py); `sysprof ab` prints its pair the same way."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from sysprof.profiler_core.analysis.compare import (
    compare_summaries,
    config_differences,
    differences_text,
    ordering,
    ordering_notes,
    other_step_fields,
)
from sysprof.profiler_core.analysis.verdicts import ALPHA, MIN_EFFECT
from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import model_column
from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.documents.run_document import Run
from sysprof.profiler_core.render.compare_report import print_compare
from sysprof.profiler_core.render.whole_tables import add_format_option, output_console


def min_effect_fraction(text: str) -> float:
    """--min-effect: a fraction strictly between 0 and 1 (0.02 = 2%)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction between 0 and 1 (0.02 = 2%), got {text!r}")
    return value


def add_min_effect_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-effect", type=min_effect_fraction, default=MIN_EFFECT, metavar="FRACTION",
                        help=f"smallest change called faster/slower (default {MIN_EFFECT:g}; raised to the "
                             "measured between-process spread when larger)")


def add_compare_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    add_min_effect_option(parser)
    parser.add_argument("--force", action="store_true", help="compare runs of different steps (model, shape, mode, "
                        "device, …); changes such as dtype, compile, attention or optimizer implementation need none")
    parser.add_argument("--json", action="store_true")
    add_format_option(parser)


def _finished(path: Path, summary: RunSummary | None) -> RunSummary:
    """The summary of a run that finished; a UsageError naming the run otherwise."""
    if not summary or summary.get("status") != events.OK:
        state = events.run_state(summary) if summary else "unfinished"
        raise UsageError(f"{path} is a {state} run; only runs that finished can be compared")
    return summary


def command_compare(args) -> int:
    if args.run_a.resolve() == args.run_b.resolve():
        raise UsageError(f"{args.run_a} is both A and B; compare two different runs")
    summaries = [Run.load(path).summary for path in (args.run_a, args.run_b)]
    summary_a, summary_b = (_finished(path, summary) for path, summary in zip((args.run_a, args.run_b), summaries))
    differences = config_differences(summary_a.get("config") or {}, summary_b.get("config") or {})
    other_step = {field: differences[field] for field in other_step_fields(differences)}
    if other_step and not args.force:
        raise UsageError(f"the runs measure different steps: {differences_text(other_step)}; add --force to "
                         "compare anyway")
    rows = compare_summaries(summary_a, summary_b, args.min_effect)
    if not rows:
        raise UsageError("the two runs have no phase in common")
    print_comparison(args, (args.run_a, summary_a), (args.run_b, summary_b), rows, differences)
    return 0


def print_comparison(args, side_a: tuple[Path, RunSummary], side_b: tuple[Path, RunSummary], rows: list[dict],
                     differences: dict) -> None:
    """compare's output (and ab's): the rows, when the processes ran, and the notes; or all of it as JSON."""
    (path_a, summary_a), (path_b, summary_b) = side_a, side_b
    model_a, model_b = (model_column(summary["config"]) for summary in (summary_a, summary_b))
    found = ordering(summary_a, summary_b)
    if args.json:
        print(json.dumps({"a": str(path_a), "b": str(path_b), "a_model": model_a, "b_model": model_b,
                          "min_effect": args.min_effect, "alpha": ALPHA, "interleaved": found["interleaved"],
                          "drift": found["drift"], "config_differences": {f: list(p) for f, p in differences.items()},
                          "phases": rows}, default=str))
        return
    title = f"B = {path_b.name} ({model_b}) against A = {path_a.name} ({model_a})"
    print_compare(output_console(args), rows, title,
                  comparison_notes(args.min_effect, differences, found, forced=args.command != "ab"))


def comparison_notes(min_effect: float, differences: dict, found: dict, forced: bool = False) -> list[str]:
    """What a comparison rests on, under its rows (compare, ab and the report say it alike): the smallest effect
    called a change, what A and B differ in, and when each side's processes ran. forced: runs of different steps
    were compared because the user asked (--force)."""
    notes = [f"minimum effect {min_effect:.1%} (raised to the between-process spread where larger), α {ALPHA:g}"]
    if differences and not (forced and other_step_fields(differences)):
        notes.append(f"A and B differ in {differences_text(differences)}")
    elif differences:
        notes.append(f"note: the runs measure different steps ({differences_text(differences)}); compared as "
                     "asked (--force)")
    return notes + ordering_notes(found)
