"""The rows of a stage that measures steps one on top of another (the combination, and refine.py's steps on top
of the answer): each step against the baseline and over the step before, judged against the last step that held
where the one before did not, its loss checked against the first step at its batch. Apart from tables.py, which
shows them, and recommendation.py, which reads the answer from them."""
from __future__ import annotations

from typing import Any

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.analysis.metrics import THROUGHPUT
from sysprof.profiler_core.analysis.verdicts import FASTER
from sysprof.profiler_core.base import events
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.cell_verdicts import (
    NOT_COMPARED,
    loss_change,
    loss_text,
    mfu_columns,
    not_finished,
    peak_gib,
    per_joule_column,
    rounded,
    why_not,
)
from sysprof.profiler_core.studies.kinds.advise.goal import SPEED, Goal, within_noise
from sysprof.profiler_core.tables.compare_tables import ratio_text


def combination_rows(study: Study, combination: dict, goal: Goal = SPEED) -> list[dict]:
    """The baseline, then each step of the combination: tokens/s against the baseline and over the step before."""
    if "skipped" in combination:
        return [{"step": "combination not run", "why": combination["skipped"]}]
    first = combination.get("first_cell")
    if first is None or len(study.cells) < first + 1 + len(combination["steps"]):
        return []
    baseline = study.cells[first]
    rows = [step_row("baseline", baseline, baseline, baseline, goal=goal)]
    held = ("the baseline", baseline)  # the last step that held: what a step after one that did not is judged by
    blocker = None  # why the steps from here are not judged: they contain a part that was slower, broke the loss…
    same_data = ("the baseline", baseline)  # the first step at this batch: whose loss a step's is checked against
    for index, step in enumerate(combination["steps"]):
        cell, before = study.cells[first + 1 + index], study.cells[first + index]
        if cell.config.batch != same_data[1].config.batch:
            same_data = (step["name"], cell)
        row = step_row(step["name"], baseline, before, cell, held, blocker, same_data, goal)
        rows.append(row | {"options": step["options"]})
        if held_up(row):
            held = (step["name"], cell)
        elif blocker is None and blocks(row):
            blocker = _blocker_text(step["name"], row)
    return rows + [{"step": step["name"], "status": "not run", "why": LEFT_OUT, "options": step["options"]}
                   for step in combination.get("left_out", [])]


LEFT_OUT = "over the budget: not measured on top of the steps above (--resume with a larger --budget)"


def blocks(row: dict) -> bool:
    """Whether a step that did not hold stops the steps after it from being judged: all but one within noise (it
    was slower, changed the loss, did not end ok, could not be judged, or has not finished yet)."""
    return not held_up(row) and not within_noise(row.get("why"))


def _blocker_text(name: str, row: dict) -> str:
    """The why of every step after one that blocks (blocks)."""
    if row.get("status") == events.PENDING:
        return f"not judged yet: it contains {added_part(name)}, whose own step has not finished"
    return f"not judged: it contains {added_part(name)}, whose own step did not hold ({row.get('why')})"


def step_row(name: str, baseline: Any, before: Any, cell: Any, held: tuple[str, Any] | None = None,
              blocker: str | None = None, same_data: tuple[str, Any] | None = None,
              goal: Goal = SPEED) -> dict[str, Any]:
    """One step's row. It helps when it is faster than the step before; after a step that was within noise, when it
    is faster than the last one that held: on the 2.7B H200, bf16 + batch 16 was "within noise" over bf16 (p =
    0.054 with one slow bf16 process, Welch's t on two a side), and reduce-overhead on top of it, 2.6× bf16's
    tokens/s, was left out of the answer with it. After a step that was not within noise (blocks), no step is
    judged: each contains that part. same_data: the first step at this step's batch, whose loss this one's is
    checked against where the baseline's is other data. goal: the row the verdicts rest on (goal.py)."""
    row: dict[str, Any] = {"step": name}
    ended = not_finished(baseline, "the baseline") or not_finished(cell, "this step")
    if ended:
        return row | {"status": ended[0], "why": ended[1]}
    summary = cell.summary
    row |= {"status": events.OK, "tokens/s": rounded(summary.get(THROUGHPUT))}
    if cell is baseline:
        return row | mfu_columns(summary) | per_joule_column(summary) | {"peak GiB": peak_gib(summary)}
    overall = {r["phase"]: r for r in compare_summaries(baseline.summary, summary)}.get(goal.row)
    step = {r["phase"]: r for r in compare_summaries(before.summary, summary)}.get(
        goal.row) if before.summary is not None else None  # a step before that never ran blocks this one
    loss = loss_change(baseline, cell)
    checked = _loss_checked(loss, cell, same_data)
    return row | {"× baseline": ratio_text(overall) if overall else None,
                  "over the step before": step["verdict_text"] if step else None,
                  **mfu_columns(summary), **per_joule_column(summary), "peak GiB": peak_gib(summary),
                  "compile s": summary.get("compile_s"), "loss Δ %": _checked_loss_text(loss, checked, same_data),
                  "why": blocker or _step_why(
                      before, cell, step if before is not baseline else overall, checked, held, goal)}


def _loss_checked(loss: float | str | None, cell: Any,
                  same_data: tuple[str, Any] | None) -> tuple[float | str | None, str]:
    """(the loss change a step is judged by, against whose loss): the baseline's; after a batch step, whose data is
    another than the baseline's, the first step's at this batch (a compile or an optimizer on top of batch 16 is
    checked against batch 16, not left unchecked; each against the same one, so small changes do not add up)."""
    if loss == NOT_COMPARED and same_data is not None and same_data[1] is not cell:
        return loss_change(same_data[1], cell), f"{same_data[0]}'s"
    return loss, "the baseline's"


def _checked_loss_text(loss: float | str | None, checked: tuple[float | str | None, str],
                       same_data: tuple[str, Any] | None) -> float | str | None:
    """The loss column of a step: against the baseline's, or, where that is other data and the step was checked
    against the first step at its batch, that change and whose ("0.05 vs batch 16"), so the table shows the check
    the step's verdict rests on."""
    if loss == NOT_COMPARED and isinstance(checked[0], float) and same_data is not None:
        return f"{loss_text(checked[0])} vs {added_part(same_data[0])}"
    return loss_text(loss)


def _step_why(before: Any, cell: Any, step: dict | None, loss: tuple[float | str | None, str],
              held: tuple[str, Any] | None, goal: Goal) -> str:
    """HELPS, or why not: against the step before, or, where that one did not hold, against the last that did."""
    if held is None or held[1] is before:
        return why_not(step, *loss, goal=goal) or HELPS
    name, last = held
    broken = why_not({"verdict": FASTER}, *loss)  # the loss is judged as it is on any step
    if broken:
        return broken
    against = {r["phase"]: r for r in compare_summaries(last.summary, cell.summary)}.get(goal.row)
    said = why_not(against, *loss, goal=goal)
    if said:
        return f"{said}, against {name}, the last step that held"
    return f"{HELPS}: {times(ratio_text(against or {}))} {name}'s {goal.row}, the last step that held"


HELPS = "helps"


def added_part(step_name: str) -> str:
    """The change a step adds to the one before it: the last part of its name."""
    return step_name.rsplit(" + ", 1)[-1]


def held_up(row: dict) -> bool:
    """Whether a combination row's step held (helps over the step before, or over the last step that held)."""
    return str(row.get("why", "")).startswith(HELPS)


def helping_steps(combined: list[dict]) -> list[dict]:
    """The second stage's steps that held (the baseline row left out), in order; the last is the answer. A step
    within noise stays in the steps after it (they ran with it), which are then judged against the last step that
    held (combination_rows); an empty list means no gain held."""
    return [row for row in combined[1:] if held_up(row)]


def times(ratio: str) -> str:
    """"7.36 [6.60–8.25]" as "7.36× [6.60–8.25]": the answer reads as a speed-up, the table's column says ×."""
    value, _, interval = ratio.partition(" ")
    return f"{value}× {interval}".rstrip()
