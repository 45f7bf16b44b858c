"""Phase tables that cannot exceed their capture: each phase, and the phases together, must fit inside the kernel
time and count of the whole capture.

A kernel sits in one phase at a time, so a phase's kernel time can never be more than all kernels' together.
When it is, ranges of that phase overlap each other: on nsys stats CSVs, where nvtx_kern_sum lists a kernel once
per enclosing range, a range pushed every step and never popped nests in itself and counts each kernel once per
step since (a real capture: `fwd` unpopped for 8 steps gave forward 48.1 ms of a 15.8 ms capture). Summed rows
cannot be taken apart again, so such a phase's figures are withheld and a note names the range, instead of
printing a number that is impossible. The sqlite export labels each kernel once and never trips this.
"""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from sysprof.models.phases import PHASES

WITHHELD = "withheld"  # the key a withheld phase carries, with the reason


def withheld_phase(reason: str) -> dict[str, Any]:
    """A phase whose figures would double count: no numbers, only why."""
    return {"gpu_ns": 0, "kernels": 0, "by_class": {}, "wall_ns": 0, "busy_pct": None, "launch": None,
            "gemm_fraction": 0.0, WITHHELD: reason}


def fit_to_capture(phases: MutableMapping[str, dict[str, Any]], capture_ns: int, capture_kernels: int,
                   range_names: Mapping[str, str] | None = None) -> list[str]:
    """Withhold (in place) every phase that does not fit inside the capture, and say why; notes, or none.

    range_names: phase → the profile's own range name for it (as the notes on phase naming found it)."""
    if not capture_ns:
        return []
    over = [phase for phase in PHASES if _exceeds(phases.get(phase) or {}, capture_ns, capture_kernels)]
    together = sum((phases.get(phase) or {}).get("gpu_ns") or 0 for phase in PHASES)
    if not over and together > capture_ns:
        return _withhold_overlapping(phases, together, capture_ns)
    notes = []
    for phase in over:
        stats = phases[phase]
        name = (range_names or {}).get(phase, phase)
        reason = (f"{phase}: its kernels add up to {stats['gpu_ns'] / 1e6:,.1f} ms ({stats['kernels']:,} kernels), "
                  f"more than all kernels of the capture together ({capture_ns / 1e6:,.1f} ms, {capture_kernels:,}): "
                  f"its range {name!r} nests in itself (pushed and never popped?), so each kernel is counted once "
                  "per enclosing range; its figures are left out (the sqlite export counts each kernel once)")
        phases[phase] = withheld_phase(reason)
        notes.append(reason)
    return notes


def _exceeds(stats: Mapping[str, Any], capture_ns: int, capture_kernels: int) -> bool:
    return (stats.get("gpu_ns") or 0) > capture_ns or (stats.get("kernels") or 0) > capture_kernels


def _withhold_overlapping(phases: MutableMapping[str, dict[str, Any]], together: int, capture_ns: int) -> list[str]:
    """Each phase fits but they do not together: their ranges overlap, and which kernel is whose is unknown."""
    ran = [phase for phase in PHASES if (phases.get(phase) or {}).get("kernels")]
    reason = (f"{', '.join(ran)} together add up to {together / 1e6:,.1f} ms, more than all kernels of the capture "
              f"({capture_ns / 1e6:,.1f} ms): their ranges overlap, so some kernels are counted in two phases; "
              "their figures are left out")
    for phase in ran:
        phases[phase] = withheld_phase(reason)
    return [reason]
