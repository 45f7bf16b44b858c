"""The advise study's second stage: the candidates that passed, the best measured again and the others added one by
one, as new cells interleaved with a fresh baseline, as far as the budget left allows; or, for a plan of one
candidate, its first measurement adopted as the combination's one step. Apart from study.py, which plans the first
stage and calls this once its cells have run (or a resume finds them run)."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise import tables as advise_tables
from sysprof.profiler_core.studies.kinds.advise.budget_plan import with_processes
from sysprof.profiler_core.studies.kinds.advise.candidates import chain, options_text
from sysprof.profiler_core.studies.kinds.advise.cell_verdicts import candidate_cells, passed
from sysprof.profiler_core.studies.kinds.advise.costs import affordable_steps
from sysprof.profiler_core.studies.kinds.advise.goal import goal_of, within_noise
from sysprof.profiler_core.studies.kinds.advise.memory import Seen
from sysprof.profiler_core.studies.kinds.advise.stages import (
    DIAGNOSIS_CELL,
    diagnosis_seen,
    run_cells,
    wall_share,
    why_not_shared,
)


def combine(args: argparse.Namespace, study_dir: Path, base: Any, limit: tuple[int, str] | None,
            per_cell_s: float, budget_left_s: float) -> None:
    """The second stage: the best candidate that passed measured again, then the others added one by one, as new
    cells interleaved with a fresh baseline (each step against the one before it), as far as the budget left
    allows. A gain that does not hold here is not recommended: one lucky stage (a neighbour that slowed the
    baseline's processes) must not become the answer."""
    study = Study.load(study_dir)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    baseline, measured = candidate_cells(study, advice)
    rows = [advise_tables.candidate_row(d, baseline, cell, goal_of(advice))
            for d, cell in zip(advice["candidates"], measured)]
    seen = diagnosis_seen(study.cells[advice.get("diagnosis_cell", DIAGNOSIS_CELL)], base)
    steps = _steps(base, _ranked_for_combination(advice, rows), limit, seen)
    if not steps:
        return
    shared = why_not_shared(args, [base, *(dataclasses.replace(base, **changes) for _, changes in steps)], limit,
                            seen) is None  # decided first: fresh processes cost a start-up each
    share = wall_share(study_dir, base, shared)
    affordable, all_steps_s = affordable_steps(study, advice, steps, per_cell_s, budget_left_s / share, shared)
    all_steps_s *= share
    if affordable < 1:
        replace_combination(advice, {"skipped": f"over the budget: about {all_steps_s / 60:.1f} min more for "
                                                f"{len(steps)} steps"})
        rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
        return
    _run_steps(args, study_dir, base, advice, (steps[:affordable], steps[affordable:]), shared)


def _steps(base: Any, ranked: list[tuple[str, dict[str, Any]]], limit: tuple[int, str] | None,
           seen: Seen) -> list[tuple[str, dict[str, Any]]]:
    """The chain of the ranked candidates (candidates.chain), then a batch the steps before freed memory and launch
    gaps for."""
    steps = chain(base, ranked, limit, seen)
    if steps:
        steps += [(f"{steps[-1][0]} + {name}", changes)
                  for name, changes in advise_refine.larger_batch(base, steps[-1][1], limit, seen)]
    return steps


def _run_steps(args: argparse.Namespace, study_dir: Path, base: Any, advice: dict[str, Any],
               parts: tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]], shared: bool) -> None:
    """The steps the budget affords as new cells after a fresh baseline, kept as the combination beside those left
    out, then run."""
    steps, left_out = parts
    first = sweep.extend(study_dir, [base, *(with_processes(dataclasses.replace(base, **changes), base, shared)
                                             for _, changes in steps)])
    replace_combination(advice, {"first_cell": first, "steps": _described(steps), "left_out": _described(left_out),
                                 "shared": shared})
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
    run_cells(args, study_dir, shared)


def _described(steps: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"name": name, "options": options_text(changes), "changes": changes} for name, changes in steps]


def adopt_the_lone_candidate(study_dir: Path, shared: bool) -> None:
    """A plan of one candidate (2.7B's change at once, whose compile leaves a 10-minute budget room for nothing
    else) was chosen among none: no winner's curse to measure away, so its cells beside the baseline are the
    combination's one step, judged as any step is, and the budget goes to the steps on top of it (refine_plan.py)."""
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    lone = advice["candidates"][0]
    replace_combination(advice, {"first_cell": advice["first_cell"], "adopted": True, "shared": shared,
                                 "steps": [{key: lone[key] for key in ("name", "options", "changes")}],
                                 "left_out": []})
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)


def _ranked_for_combination(advice: dict, rows: list[dict]) -> list[tuple[str, dict[str, Any]]]:
    """The candidates that passed, best first; then, where the cells share processes (a step costs its steps, not
    a start-up), those that were within noise alone: a gain the first bottleneck hid shows once a step before it
    has removed that bottleneck (bf16 on a launch-bound step, measured after CUDA graphs and a larger batch)."""
    described = [(d, row) for d, row in zip(advice["candidates"], rows) if "changes" in d]
    passing = sorted(((row["_speedup"] or 0.0, d["name"], d["changes"]) for d, row in described
                      if row.get("why") == passed(goal_of(advice))), key=lambda item: -item[0])
    ranked = [(name, changes) for _, name, changes in passing]
    if advice.get("shared"):
        ranked += [(d["name"], d["changes"]) for d, row in described
                   if within_noise(row.get("why"))]
    return ranked


def replace_combination(advice: dict[str, Any], combination: dict[str, Any]) -> None:
    """The new combination in advice; one it replaces (a resume with more budget) stays on record, its cells kept
    (one the budget skipped has no cells)."""
    if "combination" in advice and "skipped" not in advice["combination"]:
        advice["earlier_combinations"] = [*advice.get("earlier_combinations", []), advice["combination"]]
    advice["combination"] = combination
