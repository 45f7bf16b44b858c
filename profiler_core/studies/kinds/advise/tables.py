"""The advise study's tables, rebuilt from its directory: each candidate against the baseline (tokens/s with its
interval and verdict, the phase it should move, memory, compile time, the loss check), the combination's steps, and
the answer as a command line. study.py runs the study."""
from __future__ import annotations

import dataclasses
import math
import re
import shlex
from typing import Any

from sysprof.profiler_core.analysis.compare import FASTER, SLOWER, THROUGHPUT_ROW, WITHIN_NOISE, compare_summaries
from sysprof.profiler_core.analysis.energy import tokens_per_joule
from sysprof.profiler_core.analysis.metrics import THROUGHPUT
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.options import config_from_command, config_to_args
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.render.compare_report import ratio_text
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import Tables
from sysprof.profiler_core.studies.kinds.advise import diagnosis as advise_diagnosis
from sysprof.profiler_core.studies.kinds.advise.goal import SPEED, Goal, goal_of, not_gained, within_noise

LOSS_TOLERANCE = 0.05  # relative: bf16 or a compile moves the loss by far less; a broken change by far more


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
            RECOMMENDED_TABLE: _recommendation(study, advice, measured, combined)}


CANDIDATES_TABLE = "advice: each candidate against the baseline, interleaved"
COMBINATION_TABLE = "measured again: the best candidate, then each next one added, against the step before"
ADOPTED_TABLE = "the lone candidate: chosen among none, its measurement beside the baseline is the answer's"


def _combination_title(advice: dict) -> str:
    return ADOPTED_TABLE if (advice.get("combination") or {}).get("adopted") else COMBINATION_TABLE


def candidate_cells(study: Study, advice: dict) -> tuple[Any, list[Any]]:
    """The baseline's cell and the candidates' cells, in the plan's order (a study from before the diagnosis
    stage has its baseline first)."""
    first = advice.get("first_cell", 0)
    if first is None:  # the budget left no candidate to measure
        return None, []
    return study.cells[first], study.cells[first + 1:first + 1 + len(advice.get("candidates", []))]


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
        return f"not judged yet: it contains {_added_part(name)}, whose own step has not finished"
    return f"not judged: it contains {_added_part(name)}, whose own step did not hold ({row.get('why')})"


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
    ended = _not_finished(baseline, "the baseline") or _not_finished(cell, "this step")
    if ended:
        return row | {"status": ended[0], "why": ended[1]}
    summary = cell.summary
    row |= {"status": events.OK, "tokens/s": _rounded(summary.get(THROUGHPUT))}
    if cell is baseline:
        return row | _mfu(summary) | _per_joule(summary) | {"peak GiB": _peak_gib(summary)}
    overall = {r["phase"]: r for r in compare_summaries(baseline.summary, summary)}.get(goal.row)
    step = {r["phase"]: r for r in compare_summaries(before.summary, summary)}.get(
        goal.row) if before.summary is not None else None  # a step before that never ran blocks this one
    loss = loss_change(baseline, cell)
    checked = _loss_checked(loss, cell, same_data)
    return row | {"× baseline": ratio_text(overall) if overall else None,
                  "over the step before": step["verdict_text"] if step else None,
                  **_mfu(summary), **_per_joule(summary), "peak GiB": _peak_gib(summary),
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
        return f"{_loss_text(checked[0])} vs {_added_part(same_data[0])}"
    return _loss_text(loss)


def _step_why(before: Any, cell: Any, step: dict | None, loss: tuple[float | str | None, str],
              held: tuple[str, Any] | None, goal: Goal) -> str:
    """HELPS, or why not: against the step before, or, where that one did not hold, against the last that did."""
    if held is None or held[1] is before:
        return _why_not(step, *loss, goal=goal) or HELPS
    name, last = held
    broken = _why_not({"verdict": FASTER}, *loss)  # the loss is judged as it is on any step
    if broken:
        return broken
    against = {r["phase"]: r for r in compare_summaries(last.summary, cell.summary)}.get(goal.row)
    why_not = _why_not(against, *loss, goal=goal)
    if why_not:
        return f"{why_not}, against {name}, the last step that held"
    return f"{HELPS}: {times(ratio_text(against or {}))} {name}'s {goal.row}, the last step that held"


HELPS = "helps"


def _added_part(step_name: str) -> str:
    """The change a step adds to the one before it: the last part of its name."""
    return step_name.rsplit(" + ", 1)[-1]


def held_up(row: dict) -> bool:
    """Whether a combination row's step held (helps over the step before, or over the last step that held)."""
    return str(row.get("why", "")).startswith(HELPS)


def _mfu(summary: dict) -> dict[str, Any]:
    """MFU beside the peak it is a share of: each step's own matmul precision's (the fp32 baseline's 60% of the fp32
    peak read as a fall to bf16's 19% of the bf16 peak, a 4.6× gain)."""
    mfu, precision = summary.get("mfu"), summary.get("precision_used")
    if precision == "bf16":  # the half types share one peak; the column names the one the step ran
        dtype = (summary.get("config") or {}).get("dtype", precision)
        precision = "bf16, fp8 run" if dtype == "fp8" else dtype  # FP8 counted against the bf16 peak, and said so
    return {"MFU %": _percent(mfu), "of peak": precision if mfu is not None else None}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value)


def _per_joule(summary: dict) -> dict[str, Any]:
    """tokens per joule where the GPU's energy was read (none on a CPU: no column)."""
    value = tokens_per_joule(summary)
    return {} if value is None else {"tokens/J": _rounded(value)}


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 1)


def candidate_row(described: dict, baseline: Any, cell: Any, goal: Goal = SPEED) -> dict[str, Any]:
    """One measured candidate: tokens/s ×[interval] and its verdict, the phase it should move, memory, compile,
    the loss check, and whether it is recommended (and why not); with the energy goal, tokens/J beside them, which
    the verdict and the ranking rest on."""
    row: dict[str, Any] = {"candidate": described["name"], "_speedup": None}
    ended = _not_finished(baseline, "the baseline") or _not_finished(cell, "this candidate")
    if ended:
        return row | {"status": ended[0], "why": ended[1]}
    by_phase = {r["phase"]: r for r in compare_summaries(baseline.summary, cell.summary)}
    rate, moved, judged = by_phase.get(THROUGHPUT_ROW), by_phase.get(described["moves"]), by_phase.get(goal.row)
    loss = loss_change(baseline, cell)
    row |= {"status": events.OK, "tokens/s ×": ratio_text(rate) if rate else None,
            "tokens/s": rate["verdict_text"] if rate else "missing",
            "its phase": f"{moved['phase']} {moved['verdict_text']}" if moved and moved is not rate else None,
            "peak GiB": _peak_gib(cell.summary), "compile s": cell.summary.get("compile_s"),
            "loss Δ %": _loss_text(loss),
            "_speedup": judged.get("ratio_b_over_a") if judged else None}
    if goal is not SPEED:
        row |= {f"{goal.row} ×": ratio_text(judged) if judged else None,
                goal.row: judged["verdict_text"] if judged else "missing"}
    return row | {"why": _why_not(judged, loss, goal=goal) or passed(goal)}


def passed(goal: Goal = SPEED) -> str:
    """The first stage's pass: only a gain that holds measured again is recommended."""
    return f"{goal.better}: measured again below"


PASSED = passed(SPEED)


def _not_finished(cell: Any, what: str) -> tuple[str, str] | None:
    """(status, why) of a cell that cannot be compared yet: not run, stopped between its processes (one process's
    summary is not the group's: its spread is unknown), or ended without ok."""
    summary = cell.summary
    if summary is None:
        return events.PENDING, f"{what} has not run yet"
    ran = _processes_run(cell)
    if summary.get("status") == events.OK and ran < cell.config.repeats:
        return events.PENDING, f"{what} has run {ran} of its {cell.config.repeats} processes"
    if summary.get("status") != events.OK:
        return summary.get("status", "failed"), f"{what}: {events.cell_reason(summary) or summary.get('status')}"
    return None


def _processes_run(cell: Any) -> int:
    """The group's processes once its summary is the group's; before that the cell's summary is its first
    process's, and each later one has its own under repeats/NN."""
    group = (cell.summary.get("repeats") or {}).get("processes")
    if group:
        return len(group)
    return 1 + sum(1 for _ in cell.path.glob("repeats/*/summary.json"))


def _why_not(rate: dict | None, loss: float | str | None, against: str = "the baseline's",
             goal: Goal = SPEED) -> str | None:
    if loss is None or (isinstance(loss, float) and loss > LOSS_TOLERANCE):
        shown = "not finite" if loss is None else f"{loss:.1%} off"
        return f"its loss is {shown} against {against} (same seed): it changes what is computed"
    if rate is None:
        return f"no {goal.row} to compare"
    if rate["verdict"] == FASTER:
        return None
    worse = "slower" if goal is SPEED else "less per joule"
    said = {WITHIN_NOISE: not_gained(goal), SLOWER: worse}.get(rate["verdict"],
                                                               f"not judged {goal.better}: {rate['verdict']}")
    return said + _what_it_rests_on(rate)


NOT_FASTER = not_gained(SPEED)


def _what_it_rests_on(rate: dict) -> str:
    """The verdict's own reason and the processes a side: 4.76× [4.03–5.76] "within noise" reads as a contradiction
    until it says "p=0.062; 2 processes a side" (Welch's t on two a side has one degree of freedom)."""
    sides = min(rate.get("n_a") or 0, rate.get("n_b") or 0)
    parts = [part for part in (rate.get("reason"), f"{sides} processes a side" if sides > 1 else None) if part]
    return f" ({'; '.join(parts)})" if parts else ""


NOT_COMPARED = "not compared: another batch is other data"


def loss_change(baseline: Any, cell: Any) -> float | str | None:
    """|Δ| / |baseline's| loss after the same number of weight updates (a compiling config makes one more before
    its measured steps: its compile pass is a whole step); NOT_COMPARED for another batch; None when a loss is
    missing or not finite. baseline, cell: studies.document.Cell (config and steps)."""
    if baseline.config.batch != cell.config.batch:  # other data, but a loss that is not finite is still broken
        return NOT_COMPARED if all(_finite(loss) for loss in _measured_losses(cell.steps)[:1] or [None]) else None
    ahead = _updates_before_measuring(cell.config) - _updates_before_measuring(baseline.config)
    theirs, mine = _measured_losses(baseline.steps), _measured_losses(cell.steps)
    pair = (theirs[ahead:][:1], mine[:1]) if ahead >= 0 else (theirs[:1], mine[-ahead:][:1])
    first, other = (pair[0] or [None])[0], (pair[1] or [None])[0]
    if not _finite(first) or not _finite(other):
        return None
    return abs(other - first) / abs(first) if first else abs(other)


def _loss_text(loss: float | str | None) -> float | str | None:
    """The table's cell: a percentage, "other data" for another batch, or None (shown as not finite by why)."""
    if isinstance(loss, float):
        return round(loss * 100, 2)
    return "other data" if loss == NOT_COMPARED else None


def _updates_before_measuring(cfg: Any) -> int:
    return cfg.warmup + int(cfg.compiles) if cfg.mode == "train" else 0


def _measured_losses(steps: list[dict]) -> list[Any]:
    return [s.get("loss") for s in steps if s.get("kind") == "measured" and not s.get("pass")]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _peak_gib(summary: dict) -> float | None:
    peaks = summary.get("peak_memory_bytes") or {}
    return round(max(peaks.values()) / 2**30, 2) if peaks else None


def _recommendation(study: Study, advice: dict, measured: list[dict], combined: list[dict]) -> list[dict]:
    """The answer as the command line that runs it: the last step measured again that still helped; else why there
    is none (nothing passed, the gain did not hold, or its second measurement has not finished)."""
    baseline, _ = candidate_cells(study, advice)
    if baseline is None:
        return [{"answer": "no candidate measured: the budget left none (see the skipped ones)", "command": None}]
    goal = goal_of(advice)
    kept = helping_steps(combined)
    if kept:
        untried = [row["step"] for row in combined if row.get("why") == LEFT_OUT]
        after = combined[combined.index(kept[-1]) + 1:]
        unfinished = [row["step"] for row in after if row.get("status") == events.PENDING]
        later = _not_held_in(combined, kept[-1])
        later += f"; not tried on top of it (over the budget): {', '.join(untried)}" if untried else ""
        later += (f"; not finished on top of it: {', '.join(unfinished)} (`sysprof advise --resume`)"
                  if unfinished else "")
        caveat = shared_caveat(advice.get("combination") or {}, study, kept[-1]["step"])
        how = ("measured once, the lone candidate" if (advice.get("combination") or {}).get("adopted")
               else "measured twice")
        return [{"answer": f"{kept[-1]['step']}: {goal.row} {times(kept[-1]['× baseline'])} of the baseline's, "
                           f"{how}{later}{caveat}", "options": kept[-1]["options"],
                 "command": run_command(baseline.config, kept[-1]["options"])}]
    best = next((row for row in measured if row.get("why") == passed(goal)), None)
    if best is None and any(row.get("status") == events.PENDING for row in measured):
        return [{"answer": "not yet: the candidates are being measured", "command": None}]
    if best is None:
        return [{"answer": "no candidate beat the baseline beyond noise with the same loss", "command": None}]
    once = f"{best['candidate']} was {goal.better} ({best[f'{goal.row} ×']}) once"
    if combined and combined[0].get("step") == "combination not run":
        return [{"answer": f"none confirmed: {once}, and the budget left no time to measure it again (a larger "
                           "--budget, or `sysprof ab`)", "command": None}]
    if len(combined) < 2 or combined[1].get("status") == events.PENDING:  # running, or stopped before it ended
        return [{"answer": f"not yet: {once}; its second measurement has not finished (`sysprof advise --resume`)",
                 "command": None}]
    if _may_still_hold(combined[1:]):
        return [{"answer": f"not yet: {once}, not when measured again; the steps on top of it have not finished "
                           "(`sysprof advise --resume`)", "command": None}]
    return [{"answer": _not_held_answer(once, best, combined[1], goal), "command": None}]


def shared_caveat(stage: dict, study: Study, step: str) -> str:
    """Said with an answer that compiles, measured against an eager baseline in shared processes: there the eager
    arms ran slower than in a process of their own (0.86–0.97 of it on an H200, compiled arms measured after them),
    so its ratio may read high."""
    names = [described["name"] for described in stage.get("steps", [])]
    if not stage.get("shared") or step not in names or stage.get("first_cell") is None:
        return ""
    first = stage["first_cell"]
    cell = study.cells[first + 1 + names.index(step) + stage.get("offset", 0)]
    if not cell.config.compiles or study.cells[first].config.compiles:
        return ""
    return ("; measured beside an eager baseline in shared processes, where eager steps ran up to ~15% slow: the "
            "ratio may read high (`sysprof ab` measures it in fresh processes)")


def _not_held_answer(once: str, best: dict, again: dict, goal: Goal) -> str:
    """The answer when the gain measured once did not hold measured again: noise where the second measurement
    rules it out (slower, or an interval below the first stage's ratio); where its interval still holds that ratio it
    could not tell, and says so (batch 8 at 2.68× once, then 3.24 [0.03–17.59] with one process a side far off was
    answered "noise, not a gain")."""
    why = str(again.get("why", ""))
    if within_noise(why) and _still_holds(best.get(f"{goal.row} ×"), again):
        return (f"none confirmed: {once}; measured again {again['× baseline']}, an interval that still holds that "
                f"gain: {why}; too noisy to tell, not shown to be noise (`sysprof ab` measures it again)")
    if within_noise(why) or why.startswith(("slower", "less per joule")):
        return f"none: {once}, and not when measured again: noise, not a gain"
    return f"none: {once}; measured again: {why}"


def _still_holds(once: Any, again: dict) -> bool:
    """Whether the second measurement's interval ("3.24 [0.03–17.59]") holds the first stage's ratio ("2.68 […]")."""
    first, second = _numbers(once), _numbers(again.get("× baseline"))
    return len(first) == 3 and len(second) == 3 and second[1] <= first[0] <= second[2]


def _numbers(ratio: Any) -> list[float]:
    """The numbers of a ratio cell as ratio_text writes it: "3.24 [0.03–17.59]" → [3.24, 0.03, 17.59]."""
    return [float(number) for number in re.findall(r"\d+(?:\.\d+)?", str(ratio or ""))]


def _may_still_hold(steps: list[dict]) -> bool:
    """Whether a step not finished yet may still hold: one before any step that stops the rest being judged."""
    for row in steps:
        if row.get("status") == events.PENDING:
            return True
        if blocks(row):
            return False
    return False


def _not_held_in(combined: list[dict], answer: dict) -> str:
    """The answer's parts whose own step did not hold (the steps after it ran with them), said with the answer."""
    before = combined[1:combined.index(answer)]
    parts = [_added_part(row["step"]) for row in before if not held_up(row)]
    own = "its own" if len(parts) == 1 else "their own"
    return (f"; in it, {', '.join(parts)} not shown to help on {own} (within noise; a later step is faster than "
            f"the last step that held)") if parts else ""


def run_command(baseline: RunConfig, options: str) -> str:
    """The baseline with a step's options, as one `sysprof run` line in which each option appears once (appended,
    the step's --optimizer-impl fused after the baseline's foreach read as two answers)."""
    base = shlex.join(config_to_args(dataclasses.replace(baseline, repeats=1)))
    return "sysprof run " + shlex.join(config_to_args(config_from_command(f"sysprof run {base} {options}")))


def times(ratio: str) -> str:
    """"7.36 [6.60–8.25]" as "7.36× [6.60–8.25]": the answer reads as a speed-up, the table's column says ×."""
    value, _, interval = ratio.partition(" ")
    return f"{value}× {interval}".rstrip()


def helping_steps(combined: list[dict]) -> list[dict]:
    """The second stage's steps that held (the baseline row left out), in order; the last is the answer. A step
    within noise stays in the steps after it (they ran with it), which are then judged against the last step that
    held (combination_rows); an empty list means no gain held."""
    return [row for row in combined[1:] if held_up(row)]
