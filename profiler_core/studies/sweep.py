"""Sweeps: the cartesian product of config values, one fresh runner session per cell, resumable.

A sweep directory holds `sweep.json` (every cell's config, in order) and `cells/NNN-<slug>/`, each an ordinary
run directory. A cell whose summary says ok or oom is done and is skipped when the sweep runs again; a cell
that was killed, cancelled or crashed runs again. An OOM is a result (a row with status oom), not an error.
"""
from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import config_problems, validate
from sysprof.profiler_core.base.errors import StudyError
from sysprof.profiler_core.session.backends import choose_backend
from sysprof.profiler_core.session.repeats import RepeatedRun
from sysprof.profiler_core.studies.gpu_pool import run_on_gpus
from sysprof.profiler_core.studies.lock import study_lock
from sysprof.profiler_core.studies.shared_rounds import shared_rounds


def expand(grid: dict[str, list]) -> list[RunConfig]:
    """Every combination of the listed values, in the order given (the last field varies fastest)."""
    fields = list(grid)
    empty = [name for name, values in grid.items() if not values]
    if empty:
        raise ConfigError(f"--{empty[0].replace('_', '-')} lists no values")
    configs = [RunConfig(**dict(zip(fields, values))) for values in itertools.product(*grid.values())]
    for cfg in configs:
        problems = config_problems(cfg)
        if problems:
            raise ConfigError(f"cell {_describe(cfg, fields)}: {next(iter(problems.values()))}")
    return configs


def _describe(cfg: RunConfig, fields: list[str]) -> str:
    return ", ".join(f"{f}={getattr(cfg, f)}" for f in fields)


def create(root: Path, name: str, configs: list[RunConfig], varied: list[str], study: str = "sweep") -> Path:
    """A new sweep directory; `study` names the tables its results make (see studies.results)."""
    sweep_dir = rundir.new_timestamped_dir(root, f"sweep-{name}")
    (sweep_dir / rundir.SWEEP_CELLS_DIR).mkdir()
    plan = {"study": study, "varied": varied, "cells": [cfg.to_dict() for cfg in configs], "created": time.time(),
            "command": rundir.typed_command()}
    rundir.write_json(sweep_dir / rundir.SWEEP_PLAN, plan)
    return sweep_dir


def extend(sweep_dir: Path, configs: list[RunConfig]) -> int:
    """Append cells to a sweep's plan (a study's next stage); the index of the first new one. `run` then runs them
    (the cells already done are skipped), interleaved among themselves."""
    plan = rundir.read_json(sweep_dir / rundir.SWEEP_PLAN) or {}
    first = len(plan.get("cells", []))
    plan["cells"] = [*plan.get("cells", []), *(cfg.to_dict() for cfg in configs)]
    rundir.write_json(sweep_dir / rundir.SWEEP_PLAN, plan)
    return first


def load_plan(sweep_dir: Path) -> tuple[list[RunConfig], list[str]]:
    try:
        plan = rundir.read_json(sweep_dir / rundir.SWEEP_PLAN) if sweep_dir.is_dir() else None
    except rundir.RunDirError as exc:
        raise StudyError(str(exc)) from None
    if not plan:
        raise StudyError(f"{sweep_dir} is not a sweep directory (no {rundir.SWEEP_PLAN})")
    return plan_configs(sweep_dir, plan)


def plan_configs(sweep_dir: Path, plan: dict) -> tuple[list[RunConfig], list[str]]:
    """The cells' configs (each validated) and the varied fields of a plan already read."""
    try:
        configs = [RunConfig.from_dict(cell) for cell in plan["cells"]]
        for cfg in configs:
            validate(cfg, locate_code=False)  # a directory opens wherever it was copied; --resume locates the code
    except (ConfigError, TypeError, KeyError, AttributeError) as exc:
        raise StudyError(f"{sweep_dir / rundir.SWEEP_PLAN} is damaged: {exc}") from None
    return configs, plan.get("varied", [])


def cell_dir(sweep_dir: Path, index: int, cfg: RunConfig) -> Path:
    return sweep_dir / rundir.SWEEP_CELLS_DIR / f"{index:03d}-{rundir.slug(cfg)}"


def cell_summary(path: Path) -> dict | None:
    try:
        return rundir.read_json(path / rundir.SUMMARY)
    except rundir.RunDirError:
        return None  # a torn summary: the cell runs again


def run(sweep_dir: Path, on_event: Callable[[dict], None], nsys: str | None = None,
        gpus: Sequence[str] = (), shared: bool = False, min_block_s: float = 0.0) -> list[dict]:
    """Run every cell not yet done, one process at a time in a directory (lock.py); one summary per cell."""
    with study_lock(sweep_dir):
        return _run(sweep_dir, on_event, nsys, gpus, shared, min_block_s)


def _run(sweep_dir: Path, on_event: Callable[[dict], None], nsys: str | None,
         gpus: Sequence[str], shared: bool, min_block_s: float) -> list[dict]:
    """Run every cell not yet done; returns one summary per cell, in plan order.

    With repeats, the processes go round-robin over the cells (every cell's first, then every cell's second, …),
    the order reversed every other round (A B, B A, A B, …), so that drift over the sweep (clocks, other tenants)
    hits every cell alike and no cell is always first. With gpus, cells run side by side, one per GPU
    (gpu_pool.py). shared: each round's processes are one process measuring every cell in it, with gpus as many
    rounds at once as there are GPUs (shared_rounds.py), each arm's block lasting at least min_block_s."""
    configs, _ = load_plan(sweep_dir)
    pending = [i for i, cfg in enumerate(configs) if not cell_done(sweep_dir, i, cfg)]
    if gpus and not shared:
        run_on_gpus(configs, cell_preparer(sweep_dir, configs, nsys), pending, gpus, on_event, nsys)
        return _results(sweep_dir, configs)
    groups = {index: prepare_cell(sweep_dir, index, configs[index], nsys) for index in pending}
    for group in groups.values():
        if group.complete:  # every process finished before the sweep stopped; only the group summary is missing
            group.write_summary()
    total = sum(configs[i].repeats - len(groups[i].summaries) for i in pending)
    on_event({"event": events.STUDY, "cells": len(configs), "pending": total} | ({"gpus": list(gpus)} if gpus else {}))
    if shared:
        shared_rounds(sweep_dir, configs, groups, on_event, lambda i: cell_dir(sweep_dir, i, configs[i]), gpus,
                      min_block_s)
        return _results(sweep_dir, configs)
    started, done = time.perf_counter(), 0
    for index in schedule(configs, groups):
        group = groups[index]
        if group.complete:
            continue
        process = len(group.summaries)
        on_event({"event": events.CELL, "index": index, "config": configs[index].to_dict(), "done": done,
                  "pending": total, "repeat": process + 1, "eta_s": _eta(started, done, total)})
        summary = group.run_process(process)
        done += 1
        status = group.write_summary()["status"] if group.complete else summary["status"]
        error = summary.get("error")  # a cancel or a full disk ends the sweep: the next process would fail alike
        ends_sweep = error is not None and error["kind"] in (events.CANCELLED, events.DISK_FULL)
        if group.stopped and not ends_sweep:  # an OOM or a crash ends its group, not the sweep: fewer to run
            total -= configs[index].repeats - len(group.summaries)
        on_event({"event": events.CELL_DONE, "index": index, "status": status, "reason": events.cell_reason(summary),
                  "pending": total})
        if ends_sweep:
            break
    return _results(sweep_dir, configs)


def schedule(configs: Sequence[RunConfig], groups: Mapping[int, RepeatedRun]) -> list[int]:
    """The cell of each process left, in the order a sweep run whole would take (round r: every cell's process
    r+1, the order reversed every other round), less the processes that finished. A resumed sweep so interleaves
    as a whole one does; run cell by cell from where it stopped, a 2.7B advise's cut cells ran their two processes
    back to back, after every process of the cells they are compared with ("not interleaved", no verdict)."""
    order: list[int] = []
    for round_index in range(max((configs[i].repeats for i in groups), default=0)):
        cells = list(groups) if round_index % 2 == 0 else list(groups)[::-1]
        order += [i for i in cells if len(groups[i].summaries) <= round_index < configs[i].repeats]
    return order


def cell_preparer(sweep_dir: Path, configs: list[RunConfig], nsys: str | None) -> Callable[[int], tuple[Path, bool]]:
    """For a cell run in a process of its own (gpu_pool): its directory made ready, and whether to resume it."""
    def prepare(index: int) -> tuple[Path, bool]:
        group = prepare_cell(sweep_dir, index, configs[index], nsys)
        return cell_dir(sweep_dir, index, configs[index]), bool(group.summaries)
    return prepare


def prepare_cell(sweep_dir: Path, index: int, cfg: RunConfig, nsys: str | None) -> RepeatedRun:
    """The cell's group: the processes an interrupted sweep finished are kept, the rest run."""
    path = cell_dir(sweep_dir, index, cfg)
    backend, _ = choose_backend(cfg.profiler, nsys)
    group = RepeatedRun(cfg, path, lambda event: None, backend)
    if cfg.repeats > 1 and group.resume().summaries:
        return group
    shutil.rmtree(path, ignore_errors=True)  # an abandoned attempt's steps must not mix into this one
    path.mkdir(parents=True)
    return group


def cell_done(sweep_dir: Path, index: int, cfg: RunConfig) -> bool:
    """Done: ok or oom, and with repeats every process run (or the group ended early by an OOM)."""
    summary = cell_summary(cell_dir(sweep_dir, index, cfg))
    if not summary or summary.get("status") not in events.DONE_STATUSES:
        return False
    return cfg.repeats == 1 or "repeats" in summary  # a group's summary is written when it is complete


def _results(sweep_dir: Path, configs: list[RunConfig]) -> list[dict]:
    return [cell_summary(cell_dir(sweep_dir, i, cfg)) or {"status": events.PENDING, "config": cfg.to_dict()}
            for i, cfg in enumerate(configs)]


def _eta(started: float, done: int, total: int) -> float | None:
    if done == 0:
        return None
    return (time.perf_counter() - started) / done * (total - done)
