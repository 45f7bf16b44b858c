"""The run's manifest, and what the runner says about the model it built before the first step.

The manifest (manifest.json) is written as the runner starts (the config, the environment, the command that
reproduces the run) and completed once the workload is built (the user's model, the optimizer, the precision, the
activation checkpointing). A user's model is announced with its source and its parameters; in the clean pass its
FLOPs are counted first, on a meta copy, for its MFU. Apart from the steps (engine.py): all of it is done before
the first step runs.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.events import SCHEMA_VERSION, emit
from sysprof.profiler_core.base.options import config_to_args
from sysprof.profiler_core.runner.meta_model import counted_step_flops
from sysprof.profiler_core.runner.user_model import attention_note
from sysprof.profiler_core.runner.workload import Workload


def write_manifest(run_dir: Path, cfg: RunConfig, env: dict, capture: str) -> None:
    """What the run is and where it ran: its config, the command that runs it again, its environment."""
    command = ["sysprof", "run", *config_to_args(cfg)]
    rundir.write_json(run_dir / rundir.MANIFEST, {
        "schema": SCHEMA_VERSION, "config": cfg.to_dict(), "env": env,
        "command": " ".join(command), "argv": command, "capture": capture, "started": time.time()})


def record_built(run_dir: Path, work: Workload) -> None:
    """What was built (the user's model, the optimizer): enough to reproduce it, beside the config."""
    entries: dict[str, Any] = {"model": work.model_info, "optimizer": work.optimizer_info,
                               "precision": work.precision_info, "activation_checkpointing": work.checkpointing_info}
    manifest = rundir.read_json(run_dir / rundir.MANIFEST) or {}
    rundir.write_json(run_dir / rundir.MANIFEST, manifest | {k: v for k, v in entries.items() if v})


def report_user_model(cfg: RunConfig, info: dict, count_flops: bool) -> None:
    """The user's model announced: where it came from, its parameters, its arguments (its FLOPs first, when
    count_flops)."""
    if count_flops:
        _count_flops(cfg, info)
    where = (f"{info.get('file', info['factory'])} (sha256 {info['sha256'][:12]})" if "sha256" in info
             else info["factory"])
    emit(events.NOTICE, message=f"model {info['class']} from {where}: {info['params']:,} parameters, "
                                f"kwargs {info['kwargs']}")
    unused_attention = attention_note(cfg, info["kwargs"])
    if unused_attention:
        emit(events.NOTICE, message=unused_attention)


def _count_flops(cfg: RunConfig, info: dict) -> None:
    """The closed form is the built-in model's: the user's FLOPs are counted, on a meta copy, for its MFU."""
    info["flops_per_step"], why_not = counted_step_flops(cfg)
    if why_not:
        emit(events.NOTICE, message=why_not)
    emit(events.MODEL, params=info["params"], flops_per_step=info["flops_per_step"])
