"""The advise study's answer: the last step measured again that still helped, as the `sysprof run` line that runs
it, with what it rests on (measured once or twice, parts that did not help on their own, steps over the budget or
not finished, a shared-process caveat); else why there is none. Apart from the tables' rows, which it reads."""
from __future__ import annotations

import dataclasses
import re
import shlex
from typing import Any

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.options import config_from_command, config_to_args
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.cell_verdicts import candidate_cells, passed
from sysprof.profiler_core.studies.kinds.advise.goal import Goal, goal_of, within_noise
from sysprof.profiler_core.studies.kinds.advise.step_rows import (
    LEFT_OUT,
    added_part,
    blocks,
    held_up,
    helping_steps,
    times,
)


def recommendation(study: Study, advice: dict, measured: list[dict], combined: list[dict]) -> list[dict]:
    """The answer as the command line that runs it: the last step measured again that still helped; else why there
    is none (nothing passed, the gain did not hold, or its second measurement has not finished)."""
    if "candidates" not in advice:  # the plan is written once the diagnosis has ended
        return [{"answer": "not yet: the diagnosis is running", "command": None}]
    baseline, _ = candidate_cells(study, advice)
    if baseline is None and advice["candidates"]:  # planned, their cells not added to the study yet
        return [{"answer": "not yet: the candidates are being measured", "command": None}]
    if baseline is None:
        return [{"answer": "no candidate measured: the budget left none (see the skipped ones)", "command": None}]
    goal = goal_of(advice)
    kept = helping_steps(combined)
    if kept:
        return [_held_answer(study, advice, combined, kept[-1], baseline.config)]
    best = next((row for row in measured if row.get("why") == passed(goal)), None)
    unmeasured = len(measured) < len(advice["candidates"])  # their cells not in the plan yet
    if best is None and (unmeasured or any(row.get("status") == events.PENDING for row in measured)):
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


def _held_answer(study: Study, advice: dict, combined: list[dict], answer: dict, baseline: RunConfig) -> dict:
    """The answer where a step held: its gain, how often it was measured, what in it or on top of it did not help,
    was over the budget or has not finished, and the command line that runs it."""
    untried = [row["step"] for row in combined if row.get("why") == LEFT_OUT]
    after = combined[combined.index(answer) + 1:]
    unfinished = [row["step"] for row in after if row.get("status") == events.PENDING]
    later = _not_held_in(combined, answer)
    later += f"; not tried on top of it (over the budget): {', '.join(untried)}" if untried else ""
    later += (f"; not finished on top of it: {', '.join(unfinished)} (`sysprof advise --resume`)"
              if unfinished else "")
    caveat = shared_caveat(advice.get("combination") or {}, study, answer["step"])
    how = ("measured once, the lone candidate" if (advice.get("combination") or {}).get("adopted")
           else "measured twice")
    return {"answer": f"{answer['step']}: {goal_of(advice).row} {times(answer['× baseline'])} of the baseline's, "
                      f"{how}{later}{caveat}", "options": answer["options"],
            "command": run_command(baseline, answer["options"])}


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
    parts = [added_part(row["step"]) for row in before if not held_up(row)]
    own = "its own" if len(parts) == 1 else "their own"
    return (f"; in it, {', '.join(parts)} not shown to help on {own} (within noise; a later step is faster than "
            f"the last step that held)") if parts else ""


def run_command(baseline: RunConfig, options: str) -> str:
    """The baseline with a step's options, as one `sysprof run` line in which each option appears once (appended,
    the step's --optimizer-impl fused after the baseline's foreach read as two answers)."""
    base = shlex.join(config_to_args(dataclasses.replace(baseline, repeats=1)))
    return "sysprof run " + shlex.join(config_to_args(config_from_command(f"sysprof run {base} {options}")))
