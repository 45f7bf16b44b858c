"""Live's step table: one row per warm-up and measured step as it arrives, a column per phase the steps time.

A run of `sysprof run` times forward, backward and optimizer; a traced training loop (`sysprof.trace`) its own
phases as well (data, evaluation, anything the user named), each a column in the order it first came."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sysprof.profiler_core.base.units import format_ms
from sysprof.profiler_core.tables.model import Column

STEP_PHASES = ("forward", "backward", "optimizer")  # always shown: "—" where a mode has no such phase
FIRST_PHASES = ("data",)  # a traced loop's data phase comes before the model's, as it runs


def _ms(value: Any) -> str:
    return "—" if value is None else format_ms(value)


def step_phases(steps: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The phases the table shows: the data phase where timed, the model's three, then any other in the order the
    steps first name it."""
    seen = dict.fromkeys(phase for step in steps for phase in step.get("phases_ms") or {})
    first = tuple(phase for phase in FIRST_PHASES if phase in seen)
    return first + STEP_PHASES + tuple(p for p in seen if p not in STEP_PHASES and p not in FIRST_PHASES)


def step_columns(phases: tuple[str, ...]) -> tuple[Column, ...]:
    return (Column("step", "step", numeric=False), Column("wall_ms", "wall", _ms),
            *(Column(phase, phase, _ms) for phase in phases))


def step_cells(columns: tuple[Column, ...], label: str, step: Mapping[str, Any]) -> tuple[str, ...]:
    """A step's row as text: "warm-up 3" or "step 12", its wall time, then each phase's."""
    row = {"step": f"{label} {step['index']}", "wall_ms": step.get("wall_ms")} | dict(step.get("phases_ms") or {})
    return tuple(column.text(row.get(column.key)) for column in columns)
