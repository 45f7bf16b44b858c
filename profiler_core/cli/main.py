"""`sysprof`: the headless CLI. Exit 0 on success, 2 on invalid input (one line on stderr), 1 on a failed run."""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
from pathlib import Path

from rich.console import Console

from sysprof.models.phases import phase_option
from sysprof.profiler_core.base import disk_space, events, rundir
from sysprof.profiler_core.base.config import DTYPES, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.errors import SysprofError, UsageError
from sysprof.profiler_core.base.events import finish_event
from sysprof.profiler_core.base.options import OneLineParser, add_config_options, config_from_args
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.base.stop_signals import dump_stacks_on_request, on_stop_signals
from sysprof.profiler_core.cli.ab import add_ab_options, command_ab
from sysprof.profiler_core.cli.compare import add_compare_options, command_compare
from sysprof.profiler_core.cli.event_lines import RunEventPrinter
from sysprof.profiler_core.cli.export import add_export_options, command_export
from sysprof.profiler_core.cli.live import add_live_parsers, command_attach, command_ps
from sysprof.profiler_core.cli.report import add_report_options, command_report
from sysprof.profiler_core.cli.studies import add_advise_parser, add_study_parsers, command_study
from sysprof.profiler_core.cli.sweep import add_sweep_options, command_sweep
from sysprof.profiler_core.cli.trace_command import add_trace_options, command_trace
from sysprof.profiler_core.documents.liveness import RUN
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.render import run_report as report
from sysprof.profiler_core.render.analysis_report import print_analysis
from sysprof.profiler_core.render.inspect_report import print_inspect
from sysprof.profiler_core.render.rows import print_rows
from sysprof.profiler_core.render.whole_tables import add_format_option, output_console
from sysprof.profiler_core.session.backends import choose_backend
from sysprof.profiler_core.session.inspecting import inspect_model
from sysprof.profiler_core.session.live import recorded
from sysprof.profiler_core.session.rank_checks import gpus_problem
from sysprof.profiler_core.session.repeats import RepeatedRun
from sysprof.profiler_core.studies.kind import positive_ints

stderr_console = Console(stderr=True, highlight=False)




def phase_names(text: str) -> dict[str, str]:
    """--phase forward=NAME,backward=NAME,optimizer=NAME."""
    try:
        return phase_option(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="sysprof", description="Profile Transformer LM steps (headless).")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = commands.add_parser("run", help="warm up, then time measured steps in a fresh runner process")
    add_config_options(run)
    run.add_argument("--runs-dir", help="root of run directories (default $SYSPROF_RUNS or ./runs)")
    run.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    add_format_option(run)
    run.add_argument("--nsys", help="path to nsys (else $SYSPROF_NSYS, PATH, the usual install dirs)")
    run.add_argument("--force", action="store_true",
                     help="run even when the predicted memory is more than the device has")
    run.add_argument("--full-names", action="store_true",
                     help="kernel names whole (template arguments, parameter lists); tables show the base name")
    analyze = commands.add_parser("analyze", help="kernel or memory tables from a run dir, .sqlite, .nsys-rep, "
                                                  "stats dir, torch trace or memory snapshot")
    analyze.add_argument("path", type=Path)
    analyze.add_argument("--json", action="store_true")
    add_format_option(analyze)
    analyze.add_argument("--nsys", help="nsys to export a .nsys-rep with")
    analyze.add_argument("--prefix", help="which set of nsys stats CSVs in a directory holding several "
                                          "(PREFIX of PREFIX_cuda_gpu_kern_sum.csv)")
    analyze.add_argument("--phase", type=phase_names, metavar="forward=NAME,backward=NAME,optimizer=NAME",
                         help="the NVTX range of each phase, where the profile's names are not known ones "
                              "(fwd, bwd, opt, optimizer step, …)")
    analyze.add_argument("--full-names", action="store_true",
                         help="kernel names whole (template arguments, parameter lists); tables show the base name")
    add_sweep_options(commands.add_parser("sweep", help="run the cartesian product of comma-separated values"))
    add_study_parsers(commands)
    add_advise_parser(commands)
    add_export_options(commands.add_parser("export", help="any table of a run or study directory as CSV, "
                                                          "Markdown, JSON or LaTeX"))
    add_report_options(commands.add_parser("report", help="one Markdown or HTML document (or LaTeX tables) from run "
                                                          "and study directories: what ran, the numbers with their "
                                                          "spread, every table, figures"))
    add_compare_options(commands.add_parser("compare", help="phase by phase and tokens/s, B against A: the ratio "
                                                            "with its interval and a verdict that must beat "
                                                            "run-to-run noise"))
    add_ab_options(commands.add_parser("ab", help="A against B on this node: both run in fresh processes, "
                                                  "interleaved in time, then compared"))
    add_trace_options(commands.add_parser("trace", help="your own training script, unchanged, its steps timed "
                                                        "into a run directory: sysprof trace -- python train.py"))
    inspect = commands.add_parser("inspect", help="parameters, modules, counted FLOPs and predicted memory of a "
                                                  "model built on the meta device (nothing runs)")
    add_config_options(inspect)
    inspect.add_argument("--depth", type=int, default=3, help="module table depth (default 3)")
    inspect.add_argument("--runs-dir",
                         help="where a failing model's traceback is kept (default $SYSPROF_RUNS or ./runs)")
    inspect.add_argument("--json", action="store_true")
    add_format_option(inspect)
    add_live_parsers(commands)
    models = commands.add_parser("models", help="list presets with exact parameter counts")
    models.add_argument("--json", action="store_true")
    add_format_option(models)
    models.add_argument("--ctxs", help="also the residual stream per layer (B·T·d·bytes) of each preset at these "
                                       "context lengths, e.g. 128,256,512,1024")
    models.add_argument("--batch", type=int, default=RunConfig().batch, help="batch for --ctxs")
    models.add_argument("--dtype", choices=DTYPES, default="fp32", help="activation dtype for --ctxs")
    return parser


def execute_run(cfg: RunConfig, runs_dir: str | None, nsys: str | None = None, on_event=None) -> RunSummary:
    """Run cfg (clean pass, then the passes it asks for); returns the summary whatever happened. on_event: each
    event as it comes (default: progress lines on stderr)."""
    on_event = on_event or RunEventPrinter()
    backend, notice = choose_backend(cfg.profiler, nsys)
    run_dir = rundir.new_run_dir(rundir.runs_root(runs_dir), cfg)
    # Recorded as the app's runs are: `sysprof ps` lists it and `sysprof attach` follows it from another terminal.
    with recorded(run_dir, RUN, on_event, cfg.to_dict()) as sink:
        if notice:
            sink({"event": events.NOTICE, "message": notice})
        summary = RepeatedRun(cfg, run_dir, sink, backend).run()
        sink(finish_event(summary))
    return summary


def command_run(args) -> int:
    cfg = validate(config_from_args(args))
    if gpus_problem(cfg):
        raise UsageError(gpus_problem(cfg))
    too_big = None if args.force else fit_problem(cfg, device_memory(cfg.device))
    if too_big:
        raise UsageError(too_big)
    summary = execute_run(cfg, args.runs_dir, args.nsys)
    error = summary.get("error")
    if error and error.get("kind") == "config":  # nothing ran: leave no directory behind, say why
        shutil.rmtree(summary["run_dir"], ignore_errors=True)
        raise UsageError(error["message"])
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        report.print_run(output_console(args), summary, args.full_names)
    return 0 if summary["status"] == events.OK else 1


def command_analyze(args) -> int:
    # Here, not at the top: the analyzers import pandas (and numpy), ~0.15 s that --help and models never need.
    from sysprof.profiler_core.readers.analyze import analyze_path

    if study_kind(args.path) is not None:
        raise UsageError(f"{args.path} is a sweep or study directory: `sysprof export` and `sysprof report` read it; "
                         "analyze reads one run's directory (or a profile)")
    analysis = analyze_path(args.path, args.nsys, args.prefix, args.phase)
    if args.json:
        print(json.dumps(analysis, default=str))
    else:
        print_analysis(output_console(args), analysis, args.full_names)
    return 0


def command_inspect(args) -> int:
    cfg = validate(config_from_args(args))
    if args.depth < 1:
        raise UsageError(f"--depth must be 1 or more; got {args.depth}")
    inspected = inspect_model(cfg, args.depth, rundir.runs_root(args.runs_dir))
    if args.json:
        print(json.dumps(inspected))
    else:
        print_inspect(output_console(args), inspected)
    return 0


def command_models(args) -> int:
    if args.batch <= 0:
        raise UsageError(f"--batch must be a positive integer; got {args.batch}")
    residual = report.residual_rows(positive_ints(args.ctxs, "--ctxs"), args.batch, args.dtype) if args.ctxs \
        else None
    if args.json:
        print(json.dumps(report.models_json() if residual is None else
                         {"presets": report.models_json(), "residual_stream_per_layer": residual}))
        return 0
    output_console(args).print(report.models_table())
    if residual is not None:
        print_rows(output_console(args), residual, f"residual stream per layer (batch {args.batch} × ctx × d_model × "
                                        f"{args.dtype}), MiB")
    return 0


COMMANDS = {"run": command_run, "inspect": command_inspect, "models": command_models, "analyze": command_analyze,
            "sweep": command_sweep, "study": command_study, "advise": command_study, "compare": command_compare,
            "ab": command_ab, "export": command_export, "report": command_report, "ps": command_ps,
            "attach": command_attach, "trace": command_trace}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # stop a run like Ctrl-C does (a hang-up too, unless started under nohup): steps are kept
    on_stop_signals(signal.default_int_handler, (signal.SIGTERM, signal.SIGHUP))
    dump_stacks_on_request()
    try:
        _check_options(args)
        return COMMANDS[args.command](args)
    except SysprofError as exc:
        sys.stderr.write(f"sysprof: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:  # what finished is on disk; a sweep resumes from it
        sys.stderr.write("sysprof: interrupted\n")
        return 130
    except OSError as exc:
        return _os_error(exc)
    except RuntimeError as exc:  # Path.resolve() of a loop of links, before Python 3.13 made it an OSError
        if not str(exc).startswith("Symlink loop from"):
            raise
        sys.stderr.write(f"sysprof: error: {str(exc).removeprefix('Symlink loop from ')}: a loop of links\n")
        return 2


EMPTY_ALLOWED = {"a", "b"}  # ab's sides: "" is a side of the shared options alone


def _check_options(args: argparse.Namespace) -> None:
    """What argparse lets through: an empty value taken for "not given", two options that choose one thing."""
    empty = next((name for name, value in vars(args).items() if value == "" and name not in EMPTY_ALLOWED), None)
    if empty:
        raise UsageError(f"--{empty.replace('_', '-')} is empty: give it a value or leave it out")
    if getattr(args, "json", False) and getattr(args, "format", None):
        raise UsageError("--json and --format both choose what is printed: give one of them")


def _os_error(exc: OSError) -> int:
    """A full disk, or a path the system refuses (a name too long, a loop of links, no permission): one line."""
    if disk_space.is_disk_full(exc):
        sys.stderr.write(f"sysprof: error: no space left on the device ({exc.filename or 'a run directory'}); "
                         "what was written before is kept\n")
        return 1
    if exc.filename is None:  # not about a path the user gave: a fault of the tool, with its traceback
        raise exc
    sys.stderr.write(f"sysprof: error: {exc.filename}: {exc.strerror or exc}\n")
    return 2


def entry_point() -> None:
    sys.exit(main())
