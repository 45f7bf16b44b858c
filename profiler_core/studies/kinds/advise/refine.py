"""The advisor's last stage: each candidate not in the answer, added to it and measured beside it, while the budget
lasts.

The combination (study.py) measures again what passed alone. What the first stage left out for the
budget (reduce-overhead on a launch-bound step, behind four cheaper candidates) and what a bottleneck hid are then
tried on top of the answer: an expert's next move once a step has removed one bottleneck. The cells are the
baseline, the answer, and the answer with each such candidate, in shared processes where they fit; each is judged
against the answer beside it (blocks paired in the same processes), and the fastest one that helps becomes the answer.
The plan comes from what the stages before measured: the answer's step, the shared processes' start-up.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import Tables
from sysprof.profiler_core.studies.kinds.advise import tables as advise_tables
from sysprof.profiler_core.studies.kinds.advise.budget_plan import compile_s, processes_of, with_processes
from sysprof.profiler_core.studies.kinds.advise.candidates import Candidate, chain, group_of, options_text
from sysprof.profiler_core.studies.kinds.advise.goal import SPEED, Goal, goal_of
from sysprof.profiler_core.studies.kinds.advise.memory import Seen
from sysprof.profiler_core.studies.kinds.advise.recommendation import run_command, shared_caveat
from sysprof.profiler_core.studies.kinds.advise.step_rows import LEFT_OUT, held_up, step_row, times

REFINE_TABLE = "on top of the answer: each candidate not in it, added, against the answer beside it"


def proposals(base: RunConfig, answer: dict[str, Any], ranked: list[Candidate], limit: tuple[int, str] | None,
              seen: Seen) -> list[tuple[str, dict[str, Any]]]:
    """(name, changes over the baseline) of each applicable candidate that changes something the answer does not,
    added to the answer, where that still fits; in the order given (the diagnosis's). Where the answer took a larger
    batch, the next doubling of it too: what bf16 or CUDA graphs freed (memory, launch gaps) a larger batch may
    use."""
    taken = {group_of({name: value}) for name, value in answer.items()}
    found = []
    for candidate in ranked:
        if candidate.reason or candidate.changes.items() <= answer.items():
            continue
        if candidate.group in taken:
            found += in_place(base, answer, candidate, limit, seen)
            continue
        steps = chain(base, [("answer", answer), (candidate.name, candidate.changes)], limit, seen)
        if len(steps) == 2:
            found.append((candidate.name, steps[1][1]))
    return larger_batch(base, answer, limit, seen) + found


def in_place(base: RunConfig, answer: dict[str, Any], candidate: Candidate, limit: tuple[int, str] | None,
             seen: Seen) -> list[tuple[str, dict[str, Any]]]:
    """The candidate in place of the change it refines (FP8 linear layers in bf16's), where the answer took that
    change and the result still fits; nothing for a mere alternative (TF32 beside bf16, another compile mode)."""
    if not candidate.refines or not candidate.refines.items() <= answer.items():
        return []
    steps = chain(base, [(candidate.name, answer | candidate.changes)], limit, seen)
    return [(f"{candidate.name}, in place of {options_text(candidate.refines)}", steps[0][1])] if steps else []


def larger_batch(base: RunConfig, answer: dict[str, Any], limit: tuple[int, str] | None,
                  seen: Seen) -> list[tuple[str, dict[str, Any]]]:
    """The answer at twice its batch, where the answer grew the batch and twice still fits."""
    if answer.get("batch", base.batch) <= base.batch:
        return []
    larger = answer | {"batch": answer["batch"] * 2}
    steps = chain(base, [(f"batch {larger['batch']}", larger)], limit, seen)
    return [(f"batch {larger['batch']}", larger)] if steps else []


def affordable(base: RunConfig, answer: tuple[dict[str, Any], float], start: tuple[float, float, bool],
               budget_s: float, proposed: list[tuple[str, dict[str, Any]]]) -> tuple[list, list, float]:
    """(proposals the budget affords, those it does not, the estimate). answer: its changes and measured step;
    start: a process's start-up, what an arm adds to a shared process beyond its steps (its build), and whether the
    cells share processes (one start-up a round) or not (one a cell).
    Each cell's steps at the answer's step per sample (a batch grown from the answer's grows it), and its compile as
    the plan estimates it; the baseline's at the same rate, which a baseline slower per sample only underestimates."""
    changes, answer_step_s = answer
    start_s, arm_s, shared = start
    per_sample_s = answer_step_s / changes.get("batch", base.batch)

    def cell_s(step: dict[str, Any]) -> float:
        cfg = dataclasses.replace(base, **step)
        processes = processes_of(cfg, base, shared)
        steps_s = processes * (cfg.warmup + cfg.steps) * per_sample_s * cfg.batch
        return steps_s + compile_s(cfg, processes) + processes * (arm_s if shared else start_s)

    spent = (base.repeats * start_s if shared else 0.0) + cell_s({}) + cell_s(changes)
    chosen: list[tuple[str, dict[str, Any]]] = []
    left_out: list[tuple[str, dict[str, Any]]] = []
    for name, step in proposed:
        cost = cell_s(step)
        (chosen if spent + cost <= budget_s else left_out).append((name, step))
        spent += cost if spent + cost <= budget_s else 0.0
    return chosen, left_out, spent


def run(study_dir: Path, base: RunConfig, answer: tuple[str, dict[str, Any]], chosen: list, left_out: list,
        shared: bool, run_cells: Callable[[bool], None]) -> None:
    """The stage's cells (the baseline, the answer, the answer with each chosen candidate), kept and run."""
    name, changes = answer
    configs = [base, *(with_processes(dataclasses.replace(base, **step), base, shared)
                       for step in [changes, *(step for _, step in chosen)])]
    first = sweep.extend(study_dir, configs)
    described = [{"name": f"{name} + {added}", "options": options_text(step), "changes": step}
                 for added, step in chosen]
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    advice["refine"] = {"first_cell": first, "answer": {"name": name, "options": options_text(changes)},
                        "steps": described, "shared": shared,
                        "left_out": [{"name": f"{name} + {added}", "options": options_text(step)}
                                     for added, step in left_out]}
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)
    run_cells(shared)


def record_unaffordable(study_dir: Path, name: str, left_out: list, all_s: float) -> None:
    """No step on top of the answer fits in the budget left: which ones and what measuring them would take (a
    fresh baseline, the answer again and each step), said with the answer; a resume with a larger budget tries
    them."""
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    advice["refine"] = {"skipped": f"over the budget: about {all_s / 60:.1f} min for the baseline, the answer and "
                                   f"{len(left_out)} step{'s' if len(left_out) > 1 else ''} on top of it",
                        "left_out": [{"name": f"{name} + {added}", "options": options_text(step)}
                                     for added, step in left_out]}
    rundir.write_json(study_dir / rundir.ADVICE_PLAN, advice)


def rows(study: Study, refine: dict, goal: Goal = SPEED) -> list[dict]:
    """The baseline, the answer, then each candidate added to it: tokens/s against the baseline beside them and over
    the answer; loss checked against the answer's where the batch is the same."""
    first = refine.get("first_cell")
    if first is None or len(study.cells) < first + 2 + len(refine.get("steps", [])):
        return []
    baseline, answer = study.cells[first], study.cells[first + 1]
    name = refine["answer"]["name"]
    found = [step_row("baseline", baseline, baseline, baseline, goal=goal),
             step_row(name, baseline, baseline, answer, goal=goal)
             | {"options": refine["answer"]["options"]}]
    for index, step in enumerate(refine["steps"]):
        cell = study.cells[first + 2 + index]
        same_data = (name, answer) if cell.config.batch == answer.config.batch else None
        row = step_row(step["name"], baseline, answer, cell, same_data=same_data, goal=goal)
        found.append(row | {"options": step["options"]})
    return found + [{"step": step["name"], "status": "not run", "why": LEFT_OUT,
                     "options": step["options"]} for step in refine.get("left_out", [])]


def tables(study: Study) -> Tables:
    """The advise study's tables, with this stage's rows, and its answer where a step on top of the answer helped."""
    found = advise_tables.tables(study)
    advice = rundir.read_json(study.path / rundir.ADVICE_PLAN) or {}
    refine, goal = advice.get("refine"), goal_of(advice)
    if refine and "skipped" in refine:
        return _with_unaffordable(found, refine)
    if not refine:
        return found
    refined = rows(study, refine, goal)
    if not refined:
        return found
    found[REFINE_TABLE] = refined
    better = best_helping(refined[2:], goal)
    if better is not None:
        found[RECOMMENDED_TABLE] = [_answer(study, refine, better, goal)]
    return found


def _with_unaffordable(found: Tables, refine: dict) -> Tables:
    """The answer, with the steps on top of it the budget left no time for and what they would have cost."""
    answers = found.get(RECOMMENDED_TABLE) or []
    if len(answers) != 1 or not answers[0].get("command"):
        return found
    added = ", ".join(step["name"].rpartition(" + ")[2] for step in refine["left_out"])
    said = f"; not tried on top of it ({refine['skipped']}): {added}"
    return found | {RECOMMENDED_TABLE: [answers[0] | {"answer": answers[0]["answer"] + said}]}


def best_helping(steps: list[dict], goal: Goal = SPEED) -> dict | None:
    """The step on top of the answer that helps most by the goal's measure (tokens/s, tokens/J)."""
    helping = [row for row in steps if held_up(row) and row.get(goal.row)]
    return max(helping, key=lambda row: row[goal.row], default=None)


def _answer(study: Study, refine: dict, better: dict, goal: Goal) -> dict:
    baseline = study.cells[refine["first_cell"]]
    caveat = shared_caveat(refine | {"offset": 1}, study, better["step"])  # after the answer's cell
    return {"answer": f"{better['step']}: {goal.row} {times(better['× baseline'])} of the baseline's "
                      f"measured beside it, {better['over the step before']} than {refine['answer']['name']}"
                      f"{caveat}",
            "options": better["options"], "command": run_command(baseline.config, better["options"])}
