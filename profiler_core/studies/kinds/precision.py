"""`sysprof study precision`: strict fp32, TF32 and bf16 autocast per model and context, their peak memory, and
the mixed-precision lab (accumulation in low precision, the dtypes autocast gives each tensor)."""
from __future__ import annotations

import argparse
import dataclasses
import subprocess
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import MODES
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.errors import ConfigError, StudyFailed
from sysprof.profiler_core.base.options import config_from_args
from sysprof.profiler_core.base.processes import torch_module
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import (
    StudyKind,
    Tables,
    add_model_grid_options,
    choices,
    grid_axes,
    models_and_ctxs,
    run_configs,
)


def run(args: argparse.Namespace) -> Path:
    base = config_from_args(args)
    variants = [("fp32", "highest"), ("fp32", "high"), ("bf16", "highest")]
    if base.device in ("cpu", "mps"):  # TF32 is a CUDA matmul mode: a "high" cell would time fp32 again
        variants.remove(("fp32", "high"))
    modes = choices(args.modes or base.mode, "--modes", MODES)
    configs = [dataclasses.replace(cfg, mode=mode, dtype=dtype, matmul_precision=precision)
               for cfg in models_and_ctxs(args, base) for mode in modes for dtype, precision in variants]
    for cfg in configs:  # before the lab: a wrong option is the user's to fix, said before anything runs
        validate(cfg)
    lab = _precision_lab(base.device)
    save_lab = lambda study_dir: rundir.write_json(study_dir / rundir.PRECISION_LAB, lab)  # noqa: E731
    return run_configs(args, "precision", configs, grid_axes(configs, "mode", "dtype", "matmul_precision"), save_lab)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_grid_options(parser)
    parser.add_argument("--modes", help="comma-separated modes, e.g. forward,train: the time and the memory Δ of "
                                        "fp32 vs bf16 for each (default: --mode's)")


def _precision_lab(device: str) -> dict:
    done = subprocess.run([*torch_module("sysprof.profiler_core.runner.precision_lab"), "--device", device],
                          capture_output=True, text=True)
    refused = events.decode_lines(done.stdout, (events.FAILED,))
    if refused and refused[0].get("kind") == events.CONFIG:
        raise ConfigError(refused[0]["message"])
    found = events.decode_lines(done.stdout, (events.LAB_RESULT,))
    if done.returncode != 0 or not found:
        raise StudyFailed(f"precision lab failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return {key: value for key, value in found[0].items() if key != "event"}


def tables(study: Study) -> Tables:
    from sysprof.profiler_core.studies.derived import precision_memory_table, precision_table

    rows = study.rows
    found = {_title(rows): precision_table(rows, study.summaries)}
    memory = precision_memory_table(rows)
    if memory:
        found["peak memory, fp32 vs bf16 autocast (Δ = bf16 − fp32)"] = memory
    return found | _lab_tables(study.path)


def _title(rows: list[dict]) -> str:
    if any(row.get("device type") == "cuda" for row in rows) or not rows:
        return "fp32 vs tf32 vs bf16 (speedups from the medians)"
    return (f"fp32 vs bf16 on {rows[0].get('device type')} (speedups from the medians; TF32 is a CUDA matmul mode, "
            "so its cells are left out)")


def _lab_tables(study_dir: Path) -> Tables:
    lab = rundir.read_json(study_dir / rundir.PRECISION_LAB)
    if not lab:
        return {}
    autocast = [{"tensor": name, **{dtype: lab["autocast"][dtype][name] for dtype in lab["autocast"]}}
                for name in lab["autocast"]["fp16"]]
    title = f"dtypes under autocast ({lab['device']}, torch {lab['torch_version']})"
    if lab["device"] != "cuda":
        norm = lab["autocast"]["bf16"].get("LayerNorm output")
        title += (f": {lab['device']} autocast has its own op lists, not CUDA's (here LayerNorm output is {norm}; "
                  "CUDA's autocast keeps layer norm in float32): run the study on the GPU for the GPU's answer")
    return {f"accumulating 0.01 a thousand times ({lab['device']})": lab["accumulation"], title: autocast}


KIND = StudyKind(
    "precision", "accumulation demo, autocast dtypes, fp32/tf32/bf16 speedups", add_arguments, run, tables,
    order=40, templates={"precision study: fp32/tf32/bf16 + lab": "study precision --models small,medium,large"},
    cpu_templates={"precision study (CPU)": "study precision --models tiny --device cpu --ctx 64 --steps 3"})
