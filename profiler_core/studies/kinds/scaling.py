"""`sysprof study scaling`: one config over 1, 2, 4, 8 … GPUs of this host (DDP and/or FSDP): step time, tokens/s
over all GPUs, scaling efficiency against one GPU, peak memory per GPU, and with `--profiler nsys` the
communication of every rank (NCCL time, its share, how much of it no compute hid).

Each cell is a run with --nproc N (one GPU, the reference, is the plain single process); with --repeats, every
cell's processes go round-robin over the cells, so a slow spell of a shared host lands on every GPU count alike.
Efficiency is the median tokens/s per GPU over the one-GPU cell's median tokens/s. A GPU count the host lacks is
a row "not run" with the reason, not a failure. On the CPU the ranks are gloo processes (how the tests run it);
torchrun gives each of them one thread while the one-process reference takes every core, so a CPU efficiency
says nothing about scaling: it proves the tables, not a speed-up.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
from pathlib import Path

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.analysis.metrics import process_record
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import PARALLELS, ConfigError, RunConfig
from sysprof.profiler_core.base.nvml import visible_gpu_count
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.base.records import phases_of
from sysprof.profiler_core.session.repeats import process_dir
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import StudyKind, Tables, choices, ints, run_configs

SINGLE = "single"  # the one-GPU reference: a plain process, neither DDP nor FSDP
COMMUNICATION_FIELDS = (("comm_ms", "NCCL ms per step"), ("comm_share_pct", "NCCL % of kernel time"),
                        ("exposed_comm_ms", "exposed ms"), ("overlap_pct", "overlap %"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.add_argument("--models", help="comma-separated presets (default: --model's)")
    parser.add_argument("--gpus", default="1,2,4,8", help="GPU counts, one rank each (default 1,2,4,8); 1 is "
                                                          "the reference of the efficiency")
    parser.add_argument("--parallels", help="ddp and/or fsdp for the counts above one (default: --parallel's)")


def run(args: argparse.Namespace) -> Path:
    base = config_from_args(args)
    if base.nproc != 1:
        raise ConfigError("study scaling gives each cell its --nproc from --gpus; leave --nproc out")
    models = choices(base.model if args.models is None else args.models, "--models", tuple(PRESETS) + ("custom",))
    counts = ints(args.gpus, "--gpus")
    if min(counts) < 1:
        raise ConfigError(f"--gpus takes GPU counts of 1 or more; got {args.gpus!r}")
    parallels = choices(args.parallels or base.parallel, "--parallels", PARALLELS)
    have = usable_ranks(base)
    cells, not_run = plan_cells(base, models, counts, parallels, have)
    if not cells:
        raise ConfigError(f"no count of --gpus {args.gpus} fits this host: {have} usable")
    varied = [name for name in ("model", "nproc", "parallel") if len({getattr(c, name) for c in cells}) > 1]
    return run_configs(args, "scaling", cells, varied, lambda study_dir: _note_not_run(study_dir, not_run))


def usable_ranks(cfg: RunConfig) -> int:
    """GPUs a rank can take; CPU ranks (gloo: --device cpu, or auto on a node without GPUs) share the cores."""
    visible = 0 if cfg.device == "cpu" else visible_gpu_count()
    return visible if cfg.device == "cuda" or visible else os.cpu_count() or 1


def plan_cells(base: RunConfig, models: list[str], counts: list[int], parallels: list[str],
               have: int) -> tuple[list[RunConfig], list[dict]]:
    """The cells that fit this host, and those that do not with the reason; one GPU is one cell, not one per
    parallel."""
    cells, not_run = [], []
    for model in models:
        for count in dict.fromkeys(counts):
            for parallel in ([SINGLE] if count == 1 else parallels):
                if count > have:
                    not_run.append({"model": model, "parallel": parallel, "gpus": count,
                                    "reason": f"needs {count} GPUs, this host has {have}"})
                    continue
                chosen = RunConfig.parallel if parallel == SINGLE else parallel  # one GPU: the plain model
                cells.append(dataclasses.replace(base, model=model, nproc=count, parallel=chosen))
    return cells, not_run


def _note_not_run(study_dir: Path, not_run: list[dict]) -> None:
    plan = rundir.read_json(study_dir / rundir.SWEEP_PLAN) or {}
    rundir.write_json(study_dir / rundir.SWEEP_PLAN, {**plan, "not_run": not_run})


def process_figures(path: Path, summary: dict) -> list[dict]:
    """Per process of a cell that finished ok (run order): the job's step (its slowest rank's median) and tokens/s
    over all its ranks. A group summary keeps its first process's per-rank table; later processes have their own
    summaries in repeats/."""
    records = (summary.get("repeats") or {}).get("processes") or [process_record(summary)]
    figures = []
    for index, record in enumerate(records):
        own = summary if index == 0 else (rundir.read_summary(process_dir(path, index)) or {})
        if record.get("status") != events.OK:
            continue
        ranks = own.get("ranks") or {}
        steps = [(row.get("median_ms") or {}).get("step") for row in ranks.get("rows") or []]
        step = max((ms for ms in steps if ms is not None), default=phases_of(record).get("step"))
        tokens = ranks.get("tokens_per_s_all_ranks") if ranks.get("rows") else record.get("tokens_per_s")
        figures.append({"step_ms": step, "tokens_per_s": tokens})
    return figures


def peak_bytes(summary: dict) -> int | None:
    """The highest allocated peak of any rank (of any phase for a single process)."""
    rows = (summary.get("ranks") or {}).get("rows") or []
    peaks = ([row.get("peak_allocated_bytes") for row in rows] if rows
             else list((summary.get("peak_memory_bytes") or {}).values()))
    return max((peak for peak in peaks if peak), default=None)


def _median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def cell_row(cfg: RunConfig, summary: dict | None, figures: list[dict], reference: float | None) -> dict:
    steps = [f["step_ms"] for f in figures if f["step_ms"] is not None]
    tokens = _median([f["tokens_per_s"] for f in figures])
    per_gpu = tokens / cfg.nproc if tokens else None
    requested = ((summary or {}).get("repeats") or {}).get("n") or cfg.repeats
    peak = peak_bytes(summary or {})
    return {"model": cfg.model, "parallel": SINGLE if cfg.nproc == 1 else cfg.parallel, "GPUs": cfg.nproc,
            "status": (summary or {}).get("status", events.PENDING), "processes ok": f"{len(figures)} of {requested}",
            "step ms": _round(_median(steps)), "step ms min": _round(min(steps, default=None)),
            "step ms max": _round(max(steps, default=None)), "tokens/s all GPUs": _round(tokens, 0),
            "tokens/s per GPU": _round(per_gpu, 0),
            "scaling efficiency": _round(per_gpu / reference) if per_gpu and reference else None,
            "peak GiB per GPU": _round(peak / 2**30) if peak else None,
            "note": ((summary or {}).get("error") or {}).get("message")}


def tables(study: Study) -> Tables:
    figures = [process_figures(cell.path, cell.summary) if cell.summary else [] for cell in study.cells]
    reference = {cell.config.model: _median([f["tokens_per_s"] for f in found])
                 for cell, found in zip(study.cells, figures) if cell.config.nproc == 1}
    rows = [cell_row(cell.config, cell.summary, found, reference.get(cell.config.model))
            for cell, found in zip(study.cells, figures)]
    rows += [{"model": skipped["model"], "parallel": skipped["parallel"], "GPUs": skipped["gpus"],
              "status": events.NOT_RUN, "note": skipped["reason"]} for skipped in study.plan.get("not_run", [])]
    found = {"scaling: step, tokens/s and efficiency per GPU count": rows}
    communication = communication_rows([(cell.config, cell.summary) for cell in study.cells])
    if communication:
        found["communication per rank (the first process of each cell, under nsys)"] = communication
    said = [{"model": cell.config.model, "GPUs": cell.config.nproc, "finding": line} for cell in study.cells
            for line in ((cell.summary or {}).get("ranks") or {}).get("findings") or []]
    return found | ({"findings per cell": said} if said else {})


def communication_rows(cells: list[tuple[RunConfig, dict | None]]) -> list[dict]:
    return [{"model": cfg.model, "parallel": cfg.parallel, "GPUs": cfg.nproc, "rank": rank.get("rank"),
             **{title: _round(rank.get(key)) for key, title in COMMUNICATION_FIELDS}}
            for cfg, summary in cells if cfg.nproc > 1
            for rank in ((summary or {}).get("profile") or {}).get("ranks") or []]


KIND = StudyKind(
    "scaling", "step time, tokens/s and scaling efficiency per GPU count, communication per rank", add_arguments,
    run, tables, order=60,
    templates={"scaling: small over 1/2/4/8 GPUs, DDP, bf16": "study scaling --models small --gpus 1,2,4,8 --dtype "
                                                               "bf16 --attention sdpa --ctx 512 --repeats 3"},
    cpu_templates={"scaling: tiny over 1/2 gloo ranks (CPU)": "study scaling --models tiny --device cpu --gpus 1,2 "
                                                              "--ctx 64 --steps 4 --warmup 1"})
