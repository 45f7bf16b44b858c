"""`sysprof sweep`: the options of `sysprof run`, each taking a comma-separated list of values."""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.code_specs import code_location_problems
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.base.options import (
    FLAG_NAMES,
    OPTION_HELP,
    add_model_args_file_option,
    comma_items,
    flag,
    model_args,
)
from sysprof.profiler_core.memory.fit import cells_fit_problem
from sysprof.profiler_core.render import export
from sysprof.profiler_core.render.rows import print_rows
from sysprof.profiler_core.render.whole_tables import add_format_option, output_console
from sysprof.profiler_core.session.backends import choose_backend
from sysprof.profiler_core.session.rank_checks import gpus_problem
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.gpu_pool import gpus_problem as pool_problem
from sysprof.profiler_core.studies.gpu_pool import parse_gpus
from sysprof.profiler_core.studies.kernel_tables import profiled_sweep_tables
from sysprof.profiler_core.studies.memory_tables import memory_sweep_tables
from sysprof.profiler_core.studies.progress import Progress, config_label
from sysprof.profiler_core.studies.tables import (
    averaging_note,
    compact,
    pivot_fields,
    pivot_or_error,
    pivot_problem,
    planned_columns,
    sweep_document,
    visible_columns,
)

TRUE_WORDS, FALSE_WORDS = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def add_sweep_options(parser) -> None:
    for field in dataclasses.fields(RunConfig):
        help_text = OPTION_HELP[field.name][0] + " (comma-separated values)"
        if field.type == "bool":
            parser.add_argument(flag(field.name), dest=field.name, nargs="?", const="true", help=help_text)
        elif field.name == "model_args":
            parser.add_argument(flag(field.name), dest=field.name, action="append", metavar="NAME=VALUE[,VALUE…]",
                                help="an argument of the model factory; NAME=V1,V2 makes it an axis (a value that is "
                                     "one JSON literal, like [0.9,0.95], stays one value)")
        elif str(field.type).startswith("tuple"):  # the same for every cell, not an axis
            parser.add_argument(flag(field.name), dest=field.name, action="append", help=OPTION_HELP[field.name][0])
        else:
            parser.add_argument(flag(field.name), dest=field.name, help=help_text)
    add_model_args_file_option(parser)
    parser.add_argument("--force", action="store_true",
                        help="run cells even when their predicted memory is more than the device has (they end OOM)")
    parser.add_argument("--resume", type=Path, help="continue a sweep directory (finished cells are skipped)")
    parser.add_argument("--runs-dir", help="where the sweep directory goes (default $SYSPROF_RUNS or ./runs)")
    parser.add_argument("--name", default="grid", help="suffix of the sweep directory's name")
    parser.add_argument("--pivot", help="pivot rows:columns, e.g. ctx:d_model,compile")
    parser.add_argument("--value", default="fwd mean ms", help="the value a pivot shows")
    parser.add_argument("--output", help="also write the table to PATH (.csv, .md, .json, .tex)")
    parser.add_argument("--full-names", action="store_true",
                        help="kernel names whole (template arguments, parameter lists); tables show the base name")
    parser.add_argument("--json", action="store_true")
    add_format_option(parser)
    parser.add_argument("--events", action="store_true", help="progress as JSON lines on stdout (for the app)")
    parser.add_argument("--nsys", help="path to nsys for cells with --profiler nsys")
    parser.add_argument("--gpus", help="run single-GPU cells side by side, one per GPU: ids as CUDA_VISIBLE_DEVICES "
                                       "takes them, e.g. 0,1 (each cell records its GPU)")


def _values(field: dataclasses.Field, text: str) -> list:
    items = comma_items(text, flag(field.name))
    if field.type == "bool":
        if any(item.lower() not in TRUE_WORDS + FALSE_WORDS for item in items):
            raise ConfigError(f"{flag(field.name)} takes true/false values; got {text!r}")
        return [item.lower() in TRUE_WORDS for item in items]
    if "int" in str(field.type):
        try:
            return [int(item) for item in items]
        except ValueError:
            raise ConfigError(f"{flag(field.name)} takes integers; got {text!r}") from None
    return items


def model_arg_values(item: str) -> list[str]:
    """NAME=V1,V2 is an axis of NAME=V1 and NAME=V2, unless the whole value is one JSON literal ([0.9,0.95])."""
    name, _, text = item.partition("=")
    try:
        json.loads(text)
        return [item]
    except json.JSONDecodeError:
        # an empty value is left to the NAME=VALUE check (options.model_args), which says it that way
        return [f"{name}={value}" for value in comma_items(text, f"--model-arg {name}")] if text else [item]


def model_args_grid(args) -> tuple[list[tuple[str, ...]], list[str]]:
    """Every combination of the --model-arg axes (after the --model-args file's items, which they override), and
    the names of the arguments that vary."""
    axes = [model_arg_values(item) for item in args.model_args or []]
    combos = [model_args(argparse.Namespace(model_args=list(combo), model_args_file=args.model_args_file))
              for combo in itertools.product(*axes)]
    return combos, [values[0].partition("=")[0] for values in axes if len(values) > 1]


def grid_from_args(args) -> tuple[dict[str, list], list[str]]:
    """The sweep's grid and what varies in it (a model argument by its own name)."""
    grid = {}
    for field in dataclasses.fields(RunConfig):
        text = getattr(args, field.name)
        if text is not None and field.name != "model_args":
            grid[field.name] = [tuple(text)] if isinstance(text, list) else _values(field, text)
    arg_combos, varied_args = model_args_grid(args)
    if arg_combos != [()]:
        grid["model_args"] = arg_combos
    varied = [name for name, values in grid.items() if len(values) > 1 and name != "model_args"]
    return grid, varied + varied_args


def _check_resume_alone(args: argparse.Namespace) -> None:
    """--resume runs the cells the sweep planned: an axis or setting given with it would be silently ignored."""
    given = [FLAG_NAMES.get(field.name, f"--{field.name.replace('_', '-')}") for field in dataclasses.fields(RunConfig)
             if getattr(args, field.name, None) is not None]
    given += ["--model-args"] if getattr(args, "model_args_file", None) else []
    if given:
        flags = ", ".join(given)
        raise UsageError(f"--resume runs the cells the sweep planned; {flags} would change none of them: drop "
                         f"{'it' if len(given) == 1 else 'them'}, or start a new sweep")


def command_sweep(args) -> int:
    if args.output:
        export.check_writable(args.output)  # before the sweep, not after an hour of it
    if args.resume:
        _check_resume_alone(args)
        sweep_dir = args.resume
        configs, _ = sweep.load_plan(sweep_dir)
    else:
        grid, varied = grid_from_args(args)
        configs = sweep.expand(grid)
    gpus = check_before_the_first_cell(args, configs)
    if not args.resume:
        sweep_dir = sweep.create(rundir.runs_root(args.runs_dir), args.name, configs, varied)
    started = time.perf_counter()
    with Progress(args.events).recorded(sweep_dir) as progress:
        results = sweep.run(sweep_dir, progress.sweep_listener("sweep", sweep_dir), args.nsys, gpus)
    if any((cell.get("error") or {}).get("kind") == events.DISK_FULL for cell in results):
        Console(stderr=True).print("[red]the disk filled up: the sweep stopped; free some space, then "
                                   f"`sysprof sweep --resume {escape(str(sweep_dir))}` runs the rest[/]",
                                   soft_wrap=True)
    return report_sweep(args, sweep_dir, time.perf_counter() - started)


def check_before_the_first_cell(args, configs: list[RunConfig]) -> list[str]:
    """What would fail at a cell fails now, in one line (exit 2): a pivot typo, more ranks than GPUs, a cell that
    cannot fit in memory, a GPU list the cells cannot use, a missing nsys. The GPUs the cells run on (side by
    side), or none."""
    if args.pivot:
        problem = pivot_problem(planned_columns(configs), *pivot_fields(args.pivot), args.value)
        if not problem and args.value == "peak GiB" and all(cfg.device == "cpu" for cfg in configs):
            problem = "'peak GiB' is measured on CUDA only; these cells run on the CPU"
        if problem:
            raise ConfigError(f"--pivot/--value: {problem}")
    for problem in filter(None, map(gpus_problem, configs)):
        raise UsageError(problem)
    for cfg in configs:  # a resumed sweep's plan was read without it: its cells are about to run here
        for problem in code_location_problems(cfg).values():
            raise UsageError(f"cell {config_label(cfg.to_dict())}: {problem}")
    too_big = None if args.force else cells_fit_problem(configs, lambda cfg: config_label(cfg.to_dict()))
    if too_big:
        raise UsageError(too_big)
    gpus = parse_gpus(args.gpus)
    pool = pool_problem(gpus, configs) if gpus else None
    if pool:
        raise UsageError(pool)
    for profiler in sorted({cfg.profiler for cfg in configs}):
        choose_backend(profiler, args.nsys)
    return gpus


def report_sweep(args, sweep_dir: Path, elapsed_s: float) -> int:
    study = Study.load(sweep_dir)  # every file once, for every table below
    document, rows = sweep_document(study), study.rows
    table = _pivot_or_rows(args, rows, document["varied"])
    if args.output:
        export.write_table(table, args.output)
    if args.json:
        print(json.dumps(document | {"elapsed_s": elapsed_s}, default=str))
    elif not args.events:
        console = output_console(args)
        raw = args.pivot or getattr(args, "format", None) == "csv"  # CSV: each mean and std a value of its own
        shown = table if raw else compact(table)
        print_rows(console, shown, f"sweep {sweep_dir} ({elapsed_s:.0f} s)")
        note = averaging_note(rows, *pivot_fields(args.pivot)) if args.pivot else None
        if note:
            print(note)
        cross_cell = profiled_sweep_tables(rows, study.runs) | memory_sweep_tables(rows, study.runs)
        for title, table in cross_cell.items():
            print_rows(console, table, title, args.full_names)  # passes in the cells: the cross-cell tables
    return 0 if all(c["status"] in events.DONE_STATUSES for c in document["cells"]) else 1


def _pivot_or_rows(args, rows: list[dict], varied: list[str]):
    if not args.pivot:
        columns = visible_columns(rows, varied)
        return [{c: row[c] for c in columns} for row in rows]
    return pivot_or_error(rows, args.pivot, args.value)
