"""`sysprof study warmup|compile|precision|attention`: the seed reports' tables, one command each."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time

from rich.console import Console

from profiler_core import export, rundir
from profiler_core.config import ConfigError, RunConfig, validate
from profiler_core.nvml import gpu_count
from profiler_core.options import add_config_options, config_from_args
from profiler_core.report import print_rows
from profiler_core.studies import attention, sweep
from profiler_core.studies.derived import compile_table, precision_table, warmup_table
from profiler_core.studies.tables import sweep_rows

err = Console(stderr=True, highlight=False)


def add_study_parsers(commands) -> None:
    study = commands.add_parser("study", help="the seed reports' studies").add_subparsers(dest="study", required=True)
    for name, help_text in (("warmup", "0/1/2/5 warm-up steps: first-step penalty and spread"),
                            ("compile", "eager vs torch.compile, forward and train step"),
                            ("precision", "accumulation demo, autocast dtypes, fp32/tf32/bf16 speedups")):
        parser = study.add_parser(name, help=help_text)
        add_config_options(parser)
        _common(parser)
    study.choices["warmup"].add_argument("--warmups", default="0,1,2,5")
    study.choices["precision"].add_argument("--models", default="small")
    bench = study.add_parser("attention", help="attention microbenchmark: eager, compiled, SDPA")
    for option, default in (("--impl", "eager,compiled,sdpa"), ("--d", "16,32,64,128"),
                            ("--seq", "256,1024,4096,8192,16384"), ("--batch", "8"), ("--iters", "100"),
                            ("--dtype", "fp32")):
        bench.add_argument(option, default=default)
    _common(bench)


def _common(parser) -> None:
    parser.add_argument("--runs-dir", help="root for the study's directory (default $SYSPROF_RUNS or ./runs)")
    parser.add_argument("--output", help="also write the main table to PATH (.csv, .md, .json, .tex)")
    parser.add_argument("--json", action="store_true")


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


def _run_configs(args, name: str, configs: list[RunConfig], varied: list[str]) -> list[dict]:
    for cfg in configs:
        validate(cfg)
    sweep_dir = sweep.create(rundir.runs_root(args.runs_dir), name, configs, varied)
    sweep.run(sweep_dir, lambda e: e["event"] == "cell" and err.print(f"[dim]{name}: cell {e['done'] + 1}/{e['pending']}[/]"))
    return sweep_rows(sweep_dir)


def _emit(args, tables: dict[str, object], started: float) -> int:
    """Print (or write) the tables; exit 1 when a cell of the main table did not finish (ok or oom)."""
    main_table = next(iter(tables.values()))
    if args.output:
        export.write_table(main_table, args.output)
    if args.json:
        print(json.dumps({name: export.table_records(t)[1] for name, t in tables.items()} |
                         {"elapsed_s": time.perf_counter() - started}, default=str))
    else:
        for name, table in tables.items():
            print_rows(Console(), table, name)
    statuses = [str(row.get("status", "ok")) for row in export.table_records(main_table)[1]]
    return 0 if all(status.split("/")[0] in ("ok", "oom") and status.split("/")[-1] in ("ok", "oom")
                    for status in statuses) else 1


def _start(args) -> float:
    if args.output:
        export.check_writable(args.output)
    return time.perf_counter()


def study_warmup(args) -> int:
    base, started = config_from_args(args), _start(args)
    configs = [dataclasses.replace(base, warmup=w) for w in _ints(args.warmups, "--warmups")]
    rows = _run_configs(args, "warmup", configs, ["warmup"])
    return _emit(args, {"warm-up study": warmup_table(rows)}, started)


def study_compile(args) -> int:
    base, started = config_from_args(args), _start(args)
    configs = [dataclasses.replace(base, mode=mode, compile=compiled)
               for mode in ("forward", "train") for compiled in (False, True)]
    rows = _run_configs(args, "compile", configs, ["mode", "compile"])
    return _emit(args, {"torch.compile study": compile_table(rows)}, started)


def study_precision(args) -> int:
    base, started = config_from_args(args), _start(args)
    variants = [("fp32", "highest"), ("fp32", "high"), ("bf16", "highest")]
    configs = [dataclasses.replace(base, model=model, dtype=dtype, matmul_precision=precision)
               for model in args.models.split(",") for dtype, precision in variants]
    lab = _precision_lab(base.device)
    rows = _run_configs(args, "precision", configs, ["model", "dtype", "matmul_precision"])
    autocast = [{"tensor": name, **{dt: lab["autocast"][dt][name] for dt in lab["autocast"]}}
                for name in lab["autocast"]["fp16"]]
    return _emit(args, {"fp32 vs tf32 vs bf16 step time": precision_table(rows),
                        f"accumulating 0.01 a thousand times ({lab['device']})": lab["accumulation"],
                        f"dtypes under autocast ({lab['device']}, torch {lab['torch_version']})": autocast}, started)


def _precision_lab(device: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "profiler_core.precision_lab", "--device", device],
                          capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.startswith("{"):
        raise ConfigError(f"precision lab failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(done.stdout)


def study_attention(args) -> int:
    started = _start(args)
    batch, iters = (_positive(args.batch, "--batch"), _positive(args.iters, "--iters"))
    if gpu_count() == 0:
        raise ConfigError("the attention microbenchmark needs a CUDA GPU (none visible to NVML)")
    if args.dtype not in attention.BYTES:
        raise ConfigError(f"--dtype must be one of {', '.join(attention.BYTES)}")
    impls = [i for i in args.impl.split(",") if i]
    unknown = set(impls) - {"eager", "compiled", "sdpa"}
    if unknown:
        raise ConfigError(f"--impl: unknown implementation {sorted(unknown)[0]!r} (eager, compiled, sdpa)")
    groups = attention.grid(impls, _ints(args.d, "--d"), _ints(args.seq, "--seq"))
    study_dir = _study_dir(args, "attention")
    progress = lambda row: err.print(f"[dim]{row['impl']} d={row['d']} seq={row['seq']}: {row['status']}[/]")  # noqa: E731
    rows = attention.run_study(study_dir, groups, batch, iters, args.dtype, progress)
    return _emit(args, {f"attention microbenchmark, batch {args.batch}, {args.dtype} ({study_dir})": rows}, started)


def _study_dir(args, name: str):
    try:
        return attention.new_study_dir(rundir.runs_root(args.runs_dir), name)
    except OSError as exc:
        raise sweep.SweepError(f"cannot create a study directory: {exc.strerror or exc}") from None


STUDIES = {"warmup": study_warmup, "compile": study_compile, "precision": study_precision,
           "attention": study_attention}


def command_study(args) -> int:
    return STUDIES[args.study](args)
