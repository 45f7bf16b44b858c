"""What `advise --goal` ranks by: tokens/s (speed, the default) or tokens per joule (energy). A goal names the
`compare` row every verdict of the study rests on and the words it is said in; with energy, each arm's block in a
shared process lasts long enough for NVML's energy counter to give a figure (energy.py)."""
from __future__ import annotations

import dataclasses
from typing import Any

from sysprof.profiler_core.analysis.compare import ENERGY_ROW, THROUGHPUT_ROW


@dataclasses.dataclass(frozen=True)
class Goal:
    name: str
    row: str  # the compare row a verdict rests on, and the table column of its value
    better: str  # what a change that helps is: "faster", "more per joule"
    min_block_s: float = 0.0  # the shortest an arm's block may last in a shared process


# The energy counter moves about every 0.1 s (H200): 1.5 s blocks keep its step under 7% of a block, and a block
# whose steps ran faster than planned still passes energy.MIN_STRETCH_S.
SPEED = Goal("speed", THROUGHPUT_ROW, "faster")
ENERGY = Goal("energy", ENERGY_ROW, "more per joule", min_block_s=1.5)
GOALS = {goal.name: goal for goal in (SPEED, ENERGY)}


def goal_of(advice: dict[str, Any]) -> Goal:
    """The study's goal; a study from before goals were kept ranked by speed."""
    return GOALS.get(str(advice.get("goal") or SPEED.name), SPEED)


def not_gained(goal: Goal) -> str:
    """The why of a change whose gain is within run-to-run noise."""
    return f"not {goal.better} beyond run-to-run noise"


def within_noise(why: Any) -> bool:
    """Whether a row's why says its gain was within noise, on any goal."""
    return any(str(why or "").startswith(not_gained(goal)) for goal in GOALS.values())


def goal_problem(goal: Goal, on_gpu: bool) -> str | None:
    if goal is ENERGY and not on_gpu:
        return "--goal energy ranks by the GPU's energy (NVML's counter); this config runs on the CPU"
    return None
