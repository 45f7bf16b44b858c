"""`sysprof study warmup|compile|precision|attention`: the seed reports' tables, one command each."""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from sysprof.models.presets import PRESETS
from sysprof.profiler_core import events, rundir
from sysprof.profiler_core.config import MODES, ConfigError, RunConfig, validate
from sysprof.profiler_core.errors import StudyFailed
from sysprof.profiler_core.nvml import gpu_count
from sysprof.profiler_core.options import add_config_options, config_from_args
from sysprof.profiler_core.render import export
from sysprof.profiler_core.render.rows import print_rows
from sysprof.profiler_core.studies import attention, sweep
from sysprof.profiler_core.studies.progress import Progress
from sysprof.profiler_core.studies.results import all_cells_done, study_tables
from sysprof.profiler_core.studies.tables import compact

err = Console(stderr=True, highlight=False)


def add_study_parsers(commands) -> None:
    study = commands.add_parser("study", help="the seed reports' studies").add_subparsers(dest="study", required=True)
    for name, study_help in (("warmup", "0/1/2/5 warm-up steps: first-step penalty and spread"),
                             ("compile", "eager vs torch.compile: forward, train step, backward+optimizer"),
                             ("precision", "accumulation demo, autocast dtypes, fp32/tf32/bf16 speedups"),
                             ("passes", "forward vs forward+backward with their ratio, per model and ctx")):
        parser = study.add_parser(name, help=study_help)
        add_config_options(parser)
        parser.add_argument("--models", help="comma-separated presets, e.g. small,medium,large,xl,2.7B "
                                             "(default: --model's)")
        parser.add_argument("--ctxs", help="comma-separated context lengths (default: --ctx's)")
        _common(parser)
    study.choices["warmup"].add_argument("--warmups", default="0,1,2,5")
    study.choices["warmup"].add_argument("--modes", help="comma-separated modes side by side, e.g. "
                                                         "forward,forward_backward (default: --mode's)")
    bench = study.add_parser("attention", help="attention microbenchmark: eager, compiled, SDPA")
    options: tuple[tuple[str, str | None, str | None], ...] = (
            ("--impl", None, "eager, compiled and/or sdpa (default all three; on cpu eager,sdpa)"),
            ("--d", None, "head dims (default 16,32,64,128; on cpu 16,64)"),
            ("--seq", None, "sequence lengths (default 256…16384; on cpu 128,512)"),
            ("--batch", "8", None), ("--iters", None, "timed iterations per cell (default 100; on cpu 10)"),
            ("--dtype", "fp32", "fp32 and/or bf16 (autocast over fp32 inputs), e.g. fp32,bf16"),
            ("--device", "auto", "cuda, cpu or mps (auto: cuda when a GPU is visible, else cpu)"))
    for option, default_text, help_text in options:
        bench.add_argument(option, default=default_text, help=help_text)
    bench.add_argument("--model-factory", help=argparse.SUPPRESS)  # accepted only to refuse it with the reason
    _common(bench)


def _common(parser) -> None:
    parser.add_argument("--runs-dir", help="root for the study's directory (default $SYSPROF_RUNS or ./runs)")
    parser.add_argument("--output", help="also write the main table to PATH (.csv, .md, .json, .tex)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--full-names", action="store_true", help="kernel names whole (template arguments, parameter lists); tables show the base name")
    parser.add_argument("--events", action="store_true", help="progress as JSON lines on stdout (for the app)")


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise ConfigError(f"{option} takes comma-separated integers; got {text!r}") from None
    if not values or min(values) < 0:
        raise ConfigError(f"{option} takes comma-separated integers ≥ 0; got {text!r}")
    return values


def _positive(text: str, option: str) -> int:
    values = _ints(text, option)
    if len(values) != 1 or values[0] <= 0:
        raise ConfigError(f"{option} takes one positive integer; got {text!r}")
    return values[0]


def _run_configs(args, name: str, configs: list[RunConfig], varied: list[str],
                 before_run: Callable[[Path], None] | None = None) -> Path:
    for cfg in configs:
        validate(cfg)
    sweep_dir = sweep.create(rundir.runs_root(args.runs_dir), name, configs, varied, study=name)
    if before_run:
        before_run(sweep_dir)
    with Progress(args.events).recorded(sweep_dir) as progress:
        sweep.run(sweep_dir, progress.sweep_listener(name, sweep_dir))
    return sweep_dir


def emit_tables(args, study_dir: Path, started: float) -> int:
    """Print (or write) the study's tables, rebuilt from its directory; exit 1 when a cell did not finish
    (ok or oom)."""
    tables = study_tables(study_dir)
    main_table = next(iter(tables.values()))
    if args.output:
        export.write_table(main_table, args.output)
    if args.json:
        print(json.dumps({name: export.table_records(t)[1] for name, t in tables.items()} |
                         {"study_dir": str(study_dir), "elapsed_s": time.perf_counter() - started}, default=str))
    elif not args.events:
        for name, table in tables.items():
            print_rows(Console(), compact(table), name, args.full_names)
        err.print(f"[dim]{study_dir} ({time.perf_counter() - started:.0f} s)[/]")
    return 0 if all_cells_done(tables) else 1


def _start(args) -> float:
    if args.output:
        export.check_writable(args.output)
    return time.perf_counter()


def _models_and_ctxs(args, base: RunConfig) -> list[RunConfig]:
    """--models × --ctxs over the base config: the grid every model study repeats its cells over."""
    models = _choices(args.models or base.model, "--models", tuple(PRESETS) + ("custom",))
    ctxs = _ints(args.ctxs, "--ctxs") if args.ctxs else [base.ctx]
    return [dataclasses.replace(base, model=model, ctx=ctx) for model in models for ctx in ctxs]


def _grid_axes(configs: list[RunConfig], *fields: str) -> list[str]:
    """What varies among the cells, for the sweep plan."""
    return [f for f in ("model", "ctx", *fields) if len({getattr(c, f) for c in configs}) > 1]


def study_warmup(args) -> int:
    base, started = config_from_args(args), _start(args)
    modes = _choices(args.modes or base.mode, "--modes", MODES)
    configs = [dataclasses.replace(cfg, warmup=w, mode=mode) for cfg in _models_and_ctxs(args, base)
               for w in _ints(args.warmups, "--warmups") for mode in modes]
    return emit_tables(args, _run_configs(args, "warmup", configs, _grid_axes(configs, "warmup", "mode")), started)


def study_compile(args) -> int:
    base, started = config_from_args(args), _start(args)
    configs = [dataclasses.replace(cfg, mode=mode, compile=compiled,
                                   compile_mode=base.compile_mode if compiled else "default")
               for cfg in _models_and_ctxs(args, base) for mode in ("forward", "train") for compiled in (False, True)]
    return emit_tables(args, _run_configs(args, "compile", configs, _grid_axes(configs, "mode", "compile")), started)


def study_passes(args) -> int:
    base, started = config_from_args(args), _start(args)
    configs = [dataclasses.replace(cfg, mode="forward_backward") for cfg in _models_and_ctxs(args, base)]
    return emit_tables(args, _run_configs(args, "passes", configs, _grid_axes(configs)), started)


def study_precision(args) -> int:
    base, started = config_from_args(args), _start(args)
    variants = [("fp32", "highest"), ("fp32", "high"), ("bf16", "highest")]
    if base.device in ("cpu", "mps"):  # TF32 is a CUDA matmul mode: a "high" cell would time fp32 again
        variants.remove(("fp32", "high"))
    configs = [dataclasses.replace(cfg, dtype=dtype, matmul_precision=precision)
               for cfg in _models_and_ctxs(args, base) for dtype, precision in variants]
    lab = _precision_lab(base.device)
    save_lab = lambda study_dir: rundir.write_json(study_dir / rundir.PRECISION_LAB, lab)  # noqa: E731
    study_dir = _run_configs(args, "precision", configs, _grid_axes(configs, "dtype", "matmul_precision"), save_lab)
    return emit_tables(args, study_dir, started)


def _precision_lab(device: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core.runner.precision_lab", "--device", device],
                          capture_output=True, text=True)
    found = events.decode_lines(done.stdout, (events.LAB_RESULT,))
    if done.returncode != 0 or not found:
        raise StudyFailed(f"precision lab failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return {key: value for key, value in found[0].items() if key != "event"}


def study_attention(args) -> int:
    if args.model_factory:
        raise ConfigError("the attention study times the built-in attention alone, not a model; for yours, sweep "
                          "--attention naive,sdpa with --model-factory (the factory takes an attention parameter)")
    started = _start(args)
    device = _attention_device(args.device)
    default_impls, dims, seqs, default_iters = attention.DEFAULT_GRID[device]
    batch, iters = (_positive(args.batch, "--batch"), _positive(args.iters or default_iters, "--iters"))
    dtypes = _choices(args.dtype, "--dtype", attention.DTYPES)
    impls = _choices(args.impl or default_impls, "--impl", ("eager", "compiled", "sdpa"))
    groups = attention.grid(impls, _ints(args.d or dims, "--d"), _ints(args.seq or seqs, "--seq"), dtypes)
    problem = attention.device_problem(device)
    if problem:
        raise ConfigError(problem)
    study_dir = rundir.new_timestamped_dir(rundir.runs_root(args.runs_dir), "attention")
    cells = sum(len(group) for group in groups)
    with Progress(args.events).recorded(study_dir) as progress:
        progress.study("attention", study_dir, cells, cells)
        report = lambda row: progress.cell_done(progress.done, row["status"], _cell_label(row))  # noqa: E731
        attention.run_study(study_dir, groups, batch, iters, device, report)
    return emit_tables(args, study_dir, started)


def _cell_label(row: dict) -> str:
    return f"{row['impl']} {row['dtype']} d={row['d']} seq={row['seq']}"


def _attention_device(requested: str) -> str:
    if requested == "auto":
        return "cuda" if gpu_count() > 0 else "cpu"
    if requested not in attention.DEVICES:
        raise ConfigError(f"--device must be one of auto, {', '.join(attention.DEVICES)}; got {requested!r}")
    if requested == "cuda" and gpu_count() == 0:
        raise ConfigError("--device cuda: no CUDA GPU is visible to NVML (use --device cpu)")
    return requested


def _choices(text: str, option: str, allowed: tuple[str, ...]) -> list[str]:
    chosen = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [item for item in chosen if item not in allowed]
    if unknown or not chosen:
        raise ConfigError(f"{option}: {'unknown value ' + repr(unknown[0]) if unknown else 'no value'} "
                          f"(choose from {', '.join(allowed)})")
    return list(dict.fromkeys(chosen))


STUDIES = {"warmup": study_warmup, "compile": study_compile, "precision": study_precision,
           "passes": study_passes, "attention": study_attention}


def command_study(args) -> int:
    return STUDIES[args.study](args)
