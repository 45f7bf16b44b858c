"""What every row of the advise study's tables rests on: which cells are the baseline and the candidates, whether a
cell has finished all its processes, its loss against another's after as many weight updates, the verdict's "why
not", and the columns both the candidates' and the combination's rows show (MFU, tokens/J, peak memory). Apart from
tables.py and step_rows.py so that both judge a cell the same way without importing each other."""
from __future__ import annotations

import math
from typing import Any

from sysprof.profiler_core.analysis.energy import tokens_per_joule
from sysprof.profiler_core.analysis.verdicts import FASTER, SLOWER, WITHIN_NOISE
from sysprof.profiler_core.base import events
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.goal import SPEED, Goal, not_gained


def candidate_cells(study: Study, advice: dict) -> tuple[Any, list[Any]]:
    """The baseline's cell and the candidates' cells, in the plan's order (a study from before the diagnosis
    stage has its baseline first)."""
    first = advice.get("first_cell", 0)
    if first is None or first >= len(study.cells):  # no candidate to measure, or their cells not added yet
        return None, []
    return study.cells[first], study.cells[first + 1:first + 1 + len(advice.get("candidates", []))]


LOSS_TOLERANCE = 0.05  # relative: bf16 or a compile moves the loss by far less; a broken change by far more


def passed(goal: Goal = SPEED) -> str:
    """The first stage's pass: only a gain that holds measured again is recommended."""
    return f"{goal.better}: measured again below"


PASSED = passed(SPEED)


def not_finished(cell: Any, what: str) -> tuple[str, str] | None:
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


def why_not(rate: dict | None, loss: float | str | None, against: str = "the baseline's",
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


def loss_text(loss: float | str | None) -> float | str | None:
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


def mfu_columns(summary: dict) -> dict[str, Any]:
    """MFU beside the peak it is a share of: each step's own matmul precision's (the fp32 baseline's 60% of the fp32
    peak read as a fall to bf16's 19% of the bf16 peak, a 4.6× gain)."""
    mfu, precision = summary.get("mfu"), summary.get("precision_used")
    if precision == "bf16":  # the half types share one peak; the column names the one the step ran
        dtype = (summary.get("config") or {}).get("dtype", precision)
        precision = "bf16, fp8 run" if dtype == "fp8" else dtype  # FP8 counted against the bf16 peak, and said so
    return {"MFU %": _percent(mfu), "of peak": precision if mfu is not None else None}


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value)


def per_joule_column(summary: dict) -> dict[str, Any]:
    """tokens per joule where the GPU's energy was read (none on a CPU: no column)."""
    value = tokens_per_joule(summary)
    return {} if value is None else {"tokens/J": rounded(value)}


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 1)


def peak_gib(summary: dict) -> float | None:
    peaks = summary.get("peak_memory_bytes") or {}
    return round(max(peaks.values()) / 2**30, 2) if peaks else None
