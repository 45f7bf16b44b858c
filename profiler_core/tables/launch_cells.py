"""A phase's launch figures as a table reads them: which phases have them, and the verdict in a word."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sysprof.models.phases import PHASES
from sysprof.profiler_core.base.records import phases_of


def phase_launches(analysis: Mapping[str, Any]) -> dict[str, dict]:
    """Phase → its launch figures, for the phases that have them, in step order."""
    phases = phases_of(analysis)
    return {phase: launch for phase in PHASES if (launch := (phases.get(phase) or {}).get("launch"))}


def short_verdict(analysis: Mapping[str, Any], phase: str) -> str:
    """"launch" or "GPU" for a table cell ("" when the phase has no launch figures)."""
    launch = phase_launches(analysis).get(phase)
    return launch["verdict"].removesuffix("-bound") if launch else ""
