"""The advise study's last stage planned from its record: the combination's answer and its measured step, the
candidates not in it (those whose own cell failed left out) as refine.py proposes them on top of it, and as many as
the budget left affords; refine.py runs them and makes their table. Apart from study.py, which calls it after the
combination, and a resume after its unfinished cells."""
from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise import ceiling as advise_ceiling
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise.budget_plan import ARM_S, PROCESS_S, SHARED_START_S, by_expected_gain
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.costs import shared_start_s, step_s_of
from sysprof.profiler_core.studies.kinds.advise.memory import Seen
from sysprof.profiler_core.studies.kinds.advise.stages import (
    DIAGNOSIS_CELL,
    diagnosis_seen,
    on_gpu,
    run_cells,
    wall_share,
    why_not_shared,
)


def refine(args: argparse.Namespace, study_dir: Path, base: RunConfig, limit: tuple[int, str] | None,
           budget_left_s: float) -> None:
    """The last stage (refine.py): the candidates not in the combination's answer, each added to it,
    as far as the budget left affords; once per study (a resume runs its unfinished cells)."""
    study = Study.load(study_dir)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    answer = _answer_of(study, advice)
    if answer is None or ("refine" in advice and "skipped" not in advice["refine"]):
        return
    name, changes, step_s = answer
    diagnosis = study.cells[advice.get("diagnosis_cell", DIAGNOSIS_CELL)]
    seen = diagnosis_seen(diagnosis, base)
    proposed = _proposed(study, advice, base, changes, limit, (diagnosis, seen))
    configs = [base, *(dataclasses.replace(base, **step) for _, step in [(name, changes), *proposed])]
    shared = why_not_shared(args, configs, limit, seen) is None  # decided first: fresh processes cost a start-up each
    device = "cuda" if on_gpu(base) else "cpu"
    start_s = (shared_start_s(study_dir) or SHARED_START_S[device]) if shared else PROCESS_S[device]
    share = wall_share(study_dir, base, shared)
    costs = (base, (changes, step_s), (start_s, ARM_S[device], shared))
    chosen, left_out, _ = advise_refine.affordable(*costs, budget_left_s / share, proposed)
    if not chosen:
        if left_out:  # the answer says what trying them would have cost
            advise_refine.record_unaffordable(study_dir, name, left_out,
                                              advise_refine.affordable(*costs, math.inf, proposed)[2] * share)
        return
    advise_refine.run(study_dir, base, (name, changes), chosen, left_out, shared,
                      lambda shared_cells: run_cells(args, study_dir, shared_cells))


def _proposed(study: Study, advice: dict, base: RunConfig, changes: dict[str, Any], limit: tuple[int, str] | None,
              diagnosed: tuple[Any, Seen]) -> list[tuple[str, dict[str, Any]]]:
    """What refine.py proposes on top of the answer's changes, in the order the diagnosis weighs the candidates:
    none whose own cell failed, none the combination measured already."""
    diagnosis, seen = diagnosed
    hint = advise_diagnosis.hints(diagnosis.summary, diagnosis.run.analysis(rundir.KERNELS_DIR))
    failed = _failed_alone(study, advice)
    ranked = [candidate for candidate in by_expected_gain(advise_diagnosis.weighted(
        candidates(base, on_gpu(base), limit, seen), hint)) if candidate.changes not in failed]
    ran = [step.get("changes") for step in (advice.get("combination") or {}).get("steps", [])]
    return [(added, step) for added, step in advise_refine.proposals(base, changes, ranked, limit, seen)
            if step not in ran]  # a step the combination measured (its batch doubled that did not help)


def _failed_alone(study: Study, advice: dict) -> list[dict[str, Any]]:
    """The changes of the first stage's candidates whose cell failed (a smoke test that broke: FP8 on a model with a
    Linear class of its own, a user optimizer that cannot compile; an OOM): not tried again on top of the answer."""
    first = advice.get("first_cell")
    if first is None:
        return []
    cells = study.cells[first + 1:]
    return [candidate.get("changes") for candidate, cell in zip(advice.get("candidates") or [], cells, strict=False)
            if cell.summary and cell.summary.get("status") != events.OK]


def _answer_of(study: Study, advice: dict) -> tuple[str, dict[str, Any], float] | None:
    """(name, changes, measured step in seconds) of the combination's answer: its last step that helped."""
    found = advise_ceiling.combination_answer(study, advice.get("combination") or {})
    if found is None:
        return None
    index, step = found
    step_s = step_s_of(study.cells[index])
    if "changes" not in step or step_s is None:
        return None  # a study from before the changes were kept: its answer stands as it is
    return step["name"], step["changes"], step_s
