"""The advise study's plan once the diagnosis has ordered it: kept in the study's advice file, where the stages after
it, a resume and the tables read it, and said on stderr (each candidate tried, each skipped with why). Apart from
study.py, which makes the plan and measures it."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise.budget_plan import Plan
from sysprof.profiler_core.studies.kinds.advise.candidates import Candidate


def _print_plan(chosen: Plan) -> None:
    err = Console(stderr=True, highlight=False)
    then = (f"then at least {chosen.second_s / 60:.1f} min to measure the best again" if chosen.second_s else
            "a lone candidate's measurement is its answer (nothing chosen among others to measure again)")
    err.print(f"[bold]plan[/]: the baseline and {len(chosen.chosen)} candidates, interleaved; about "
              f"{chosen.estimate_s / 60:.1f} min; {then}", soft_wrap=True)
    for candidate in chosen.chosen:
        err.print(f"  try   {escape(candidate.name)} ({escape(candidate.options)})", soft_wrap=True)
    for candidate, why in chosen.skipped:
        err.print(f"[dim]  skip  {escape(candidate.name)}: {escape(why)}[/]", soft_wrap=True)


def save_plan(study_dir: Path, base: RunConfig, chosen: Plan, hint: advise_diagnosis.Hints,
              args: argparse.Namespace, first_cell: int | None) -> None:
    """Once the diagnosis ran: the plan, kept (with where the baseline's cell is) and said."""
    if not args.events:
        _print_plan(chosen)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {"baseline": base.to_dict()}
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice | {
        "hints": hint.to_dict(), "first_cell": first_cell, "estimate_s": chosen.estimate_s,
        "second_stage_s": chosen.second_s,
        "candidates": [_described(c) for c in chosen.chosen],
        "skipped": [_described(c) | {"reason": why} for c, why in chosen.skipped]})


def _described(candidate: Candidate) -> dict[str, Any]:
    return {"name": candidate.name, "options": candidate.options, "moves": candidate.moves,
            "changes": candidate.changes}
