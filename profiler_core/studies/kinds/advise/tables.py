"""The advise study's tables, rebuilt from its directory: the diagnosis, each candidate against the baseline
(tokens/s with its interval and verdict, the phase it should move, memory, compile time, the loss check), the
combination's steps (step_rows.py), and the answer as a command line (recommendation.py). study.py runs the study."""
from __future__ import annotations

from typing import Any

from sysprof.profiler_core.analysis.compare import THROUGHPUT_ROW, compare_summaries
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import Tables
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise.cell_verdicts import (
    candidate_cells,
    loss_change,
    loss_text,
    not_finished,
    passed,
    peak_gib,
    why_not,
)
from sysprof.profiler_core.studies.kinds.advise.goal import SPEED, Goal, goal_of
from sysprof.profiler_core.studies.kinds.advise.recommendation import recommendation
from sysprof.profiler_core.studies.kinds.advise.step_rows import combination_rows
from sysprof.profiler_core.tables.compare_tables import ratio_text


def tables(study: Study) -> Tables:
    """The diagnosis, the candidates against the baseline (the best first, then those not run with why), the
    combination and the answer. Before the plan exists (the diagnosis still running) only what is known."""
    advice = rundir.read_json(study.path / rundir.ADVICE_PLAN) or {}
    found = _diagnosis_tables(study, advice)
    if "candidates" not in advice:
        return found
    baseline, cells = candidate_cells(study, advice)
    goal = goal_of(advice)
    measured = [candidate_row(described, baseline, cell, goal) for described, cell in zip(advice["candidates"], cells)]
    measured.sort(key=lambda row: -(row.pop("_speedup") or 0.0))
    not_run = [{"candidate": s["name"], "status": "not run", "why": s["reason"]} for s in advice["skipped"]]
    combined = combination_rows(study, advice.get("combination") or {}, goal)
    return {CANDIDATES_TABLE: measured + not_run, **found,
            **({_combination_title(advice): combined} if combined else {}),
            RECOMMENDED_TABLE: recommendation(study, advice, measured, combined)}


CANDIDATES_TABLE = "advice: each candidate against the baseline, interleaved"
COMBINATION_TABLE = "measured again: the best candidate, then each next one added, against the step before"
ADOPTED_TABLE = "the lone candidate: chosen among none, its measurement beside the baseline is the answer's"


def _combination_title(advice: dict) -> str:
    return ADOPTED_TABLE if (advice.get("combination") or {}).get("adopted") else COMBINATION_TABLE


def _diagnosis_tables(study: Study, advice: dict) -> Tables:
    index = advice.get("diagnosis_cell")
    if index is None or index >= len(study.cells):
        return {}
    cell = study.cells[index]
    if cell.summary is None:
        return {DIAGNOSIS_TABLE: [{"phase": "baseline", "verdict": "the diagnosis has not run yet"}]}
    analysis = cell.run.analysis(rundir.KERNELS_DIR)
    predicted = None if cell.config.model_factory else predict_run_memory(cell.config)["peak_bytes"]
    return {DIAGNOSIS_TABLE: advise_diagnosis.phase_rows(cell.summary, analysis),
            "diagnosis: the config as run": advise_diagnosis.config_rows(cell.summary, analysis, predicted)}


DIAGNOSIS_TABLE = "diagnosis: where the baseline's step goes (one profiled process)"


def candidate_row(described: dict, baseline: Any, cell: Any, goal: Goal = SPEED) -> dict[str, Any]:
    """One measured candidate: tokens/s ×[interval] and its verdict, the phase it should move, memory, compile,
    the loss check, and whether it is recommended (and why not); with the energy goal, tokens/J beside them, which
    the verdict and the ranking rest on."""
    row: dict[str, Any] = {"candidate": described["name"], "_speedup": None}
    ended = not_finished(baseline, "the baseline") or not_finished(cell, "this candidate")
    if ended:
        return row | {"status": ended[0], "why": ended[1]}
    by_phase = {r["phase"]: r for r in compare_summaries(baseline.summary, cell.summary)}
    rate, moved, judged = by_phase.get(THROUGHPUT_ROW), by_phase.get(described["moves"]), by_phase.get(goal.row)
    loss = loss_change(baseline, cell)
    row |= {"status": events.OK, "tokens/s ×": ratio_text(rate) if rate else None,
            "tokens/s": rate["verdict_text"] if rate else "missing",
            "its phase": f"{moved['phase']} {moved['verdict_text']}" if moved and moved is not rate else None,
            "peak GiB": peak_gib(cell.summary), "compile s": cell.summary.get("compile_s"),
            "loss Δ %": loss_text(loss),
            "_speedup": judged.get("ratio_b_over_a") if judged else None}
    if goal is not SPEED:
        row |= {f"{goal.row} ×": ratio_text(judged) if judged else None,
                goal.row: judged["verdict_text"] if judged else "missing"}
    return row | {"why": why_not(judged, loss, goal=goal) or passed(goal)}
