"""`sysprof study KIND`: the seed reports' tables and the scaling study, one command each. The kinds live in
studies/kinds/ (one module each); this module only adds their parsers and prints what they made."""
from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console

from sysprof.profiler_core.render import export
from sysprof.profiler_core.render.rows import print_rows
from sysprof.profiler_core.render.whole_tables import add_format_option, output_console
from sysprof.profiler_core.studies.kinds import KINDS
from sysprof.profiler_core.studies.results import all_cells_done
from sysprof.profiler_core.studies.table_models import study_models
from sysprof.profiler_core.studies.tables import compact

err = Console(stderr=True, highlight=False)


def add_study_parsers(commands) -> None:
    study = commands.add_parser("study", help="the seed reports' studies and scaling over GPUs").add_subparsers(
        dest="study", required=True)
    for kind in KINDS.values():
        parser = study.add_parser(kind.name, help=kind.help)
        kind.add_arguments(parser)
        _common(parser)


def add_advise_parser(commands) -> None:
    """`sysprof advise`: the advise study under its own name (`sysprof study advise` is the same command)."""
    kind = KINDS["advise"]
    parser = commands.add_parser("advise", help=kind.help)
    kind.add_arguments(parser)
    _common(parser)
    parser.set_defaults(study="advise")


def _common(parser) -> None:
    parser.add_argument("--runs-dir", help="root for the study's directory (default $SYSPROF_RUNS or ./runs)")
    parser.add_argument("--output", help="also write the main table to PATH (.csv, .md, .json, .tex)")
    parser.add_argument("--json", action="store_true")
    add_format_option(parser)
    parser.add_argument("--full-names", action="store_true",
                        help="kernel names whole (template arguments, parameter lists); tables show the base name")
    parser.add_argument("--events", action="store_true", help="progress as JSON lines on stdout (for the app)")
    parser.add_argument("--force", action="store_true",
                        help="run cells even when their predicted memory is more than the device has (they end OOM)")


def emit_tables(args, study_dir: Path, started: float) -> int:
    """Print (or write) the study's tables, rebuilt from its directory; exit 1 when a cell did not finish
    (ok or oom)."""
    models = study_models(study_dir)
    if args.output:
        export.write_table(models[0].records(), args.output)
    if args.json:
        print(json.dumps({model.title: model.records() for model in models} |
                         {"study_dir": str(study_dir), "elapsed_s": time.perf_counter() - started}, default=str))
    elif not args.events:
        for model in models:
            raw = getattr(args, "format", None) == "csv"  # CSV to parse: each mean and std a value of its own
            rows = [dict(row) for row in model.rows]
            print_rows(output_console(args), rows if raw else compact(rows), model.title, args.full_names)
        err.print(f"[dim]{study_dir} ({time.perf_counter() - started:.0f} s)[/]")
    return 0 if all_cells_done({model.title: [dict(row) for row in model.rows] for model in models}) else 1


def _start(args) -> float:
    if args.output:
        export.check_writable(args.output)
    return time.perf_counter()


def command_study(args) -> int:
    started = _start(args)
    return emit_tables(args, KINDS[args.study].run(args), started)
