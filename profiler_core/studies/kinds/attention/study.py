"""`sysprof study attention`: the attention microbenchmark (eager, compiled, SDPA) over head dims and sequence
lengths, forward and backward time and memory, OOM cells as rows."""
from __future__ import annotations

import argparse
from pathlib import Path

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import ConfigError
from sysprof.profiler_core.base.nvml import gpu_count
from sysprof.profiler_core.memory.fit import device_memory
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import StudyKind, Tables, choices, positive, positive_ints
from sysprof.profiler_core.studies.kinds.attention import cells as attention
from sysprof.profiler_core.studies.progress import Progress

OPTIONS: tuple[tuple[str, str | None, str | None], ...] = (
    ("--impl", None, "eager, compiled, sdpa and/or your attention function (q, k, v[, mask]) as file.py:fn or "
                     "module:fn, compiled:file.py:fn to compile it (default the three built-in; on cpu eager,sdpa)"),
    ("--d", None, "head dims (default 16,32,64,128; on cpu 16,64)"),
    ("--seq", None, "sequence lengths (default 256…16384; on cpu 128,512)"),
    ("--batch", "8", None), ("--iters", None, "timed iterations per cell (default 100; on cpu 10)"),
    ("--dtype", "fp32", "fp32 and/or bf16 (autocast over fp32 inputs), e.g. fp32,bf16"),
    ("--device", "auto", "cuda, cpu or mps (auto: cuda when a GPU is visible, else cpu)"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for option, default_text, help_text in OPTIONS:
        parser.add_argument(option, default=default_text, help=help_text)
    parser.add_argument("--model-factory", help=argparse.SUPPRESS)  # accepted only to refuse it with the reason


def run(args: argparse.Namespace) -> Path:
    if args.model_factory:
        raise ConfigError("the attention study times attention functions, not a model: give yours as --impl "
                          "file.py:fn (q, k, v[, mask] → output); for a whole model, sweep --attention naive,sdpa "
                          "with --model-factory (the factory takes an attention parameter)")
    device = _device(args.device)
    default_impls, dims, seqs, default_iters = attention.DEFAULT_GRID[device]
    batch = positive(args.batch, "--batch")
    iters = positive(default_iters if args.iters is None else args.iters, "--iters")
    dtypes = choices(args.dtype, "--dtype", attention.DTYPES)
    impls = attention.implementations(default_impls if args.impl is None else args.impl)
    groups = attention.grid(impls, positive_ints(dims if args.d is None else args.d, "--d"),
                            positive_ints(seqs if args.seq is None else args.seq, "--seq"), dtypes)
    too_big = None if args.force else attention.fit_problem(groups, batch, device_memory(device))
    if too_big:
        raise ConfigError(too_big)
    problem = attention.device_problem(device)
    if problem:
        raise ConfigError(problem)
    study_dir = rundir.new_timestamped_dir(rundir.runs_root(args.runs_dir), "attention")
    cells = sum(len(group) for group in groups)
    with Progress(args.events).recorded(study_dir) as progress:
        progress.study("attention", study_dir, cells, cells)
        report = lambda row: progress.cell_done(progress.done, row["status"], _cell_label(row),  # noqa: E731
                                                reason=row.get("why") or "")
        attention.run_study(study_dir, groups, batch, iters, device, report)
    return study_dir


def _cell_label(row: dict) -> str:
    return f"{row['impl']} {row['dtype']} d={row['d']} seq={row['seq']}"


def _device(requested: str) -> str:
    if requested == "auto":
        return "cuda" if gpu_count() > 0 else "cpu"
    if requested not in attention.DEVICES:
        raise ConfigError(f"--device must be one of auto, {', '.join(attention.DEVICES)}; got {requested!r}")
    if requested == "cuda" and gpu_count() == 0:
        raise ConfigError("--device cuda: no CUDA GPU is visible to NVML (use --device cpu)")
    return requested


def tables(study: Study) -> Tables:
    from sysprof.profiler_core.studies.kinds.attention.tables import attention_tables

    return attention_tables(study.path)


KIND = StudyKind("attention", "attention microbenchmark: eager, compiled, SDPA", add_arguments, run, tables, order=50,
                 templates={"attention microbenchmark": "study attention --dtype fp32,bf16"},
                 cpu_templates={"attention microbenchmark (CPU)": "study attention --device cpu"}, sweep_cells=False)
