"""Phases (forward / backward / optimizer) and step numbers for every trace event.

A memory snapshot carries no NVTX ranges, so phases are inferred:

1. Each event's own stack gives evidence (see frames.summarize_stack): a frame in torch/optim → optimizer;
   the autograd engine, an autograd node, torch/autograd or Tensor.backward → backward; a module
   `forward` or torch.nn code (the loss) → forward. Stacks with only training-loop frames (`<module>`,
   `step`) or no frames at all say nothing.
2. Events whose stack says nothing inherit the phase of the previous event. This is what places the
   frame-less frees of the autograd thread in backward, and the `del loss` between steps in the phase
   that was running.
3. torch adds `Optimizer.step#…` / `Optimizer.zero_grad#…` START/END records to
   `external_annotations` (with time_us); every event inside one of those ranges is optimizer, which
   holds even for snapshots recorded without stacks.

A new step begins whenever forward starts after backward or optimizer.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from sysprof.profiler_core.base.units import ordinal

from .frames import StackCache

BEFORE_RECORDING = "before_recording"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PhaseMark:
    phase: str
    step: int
    event_index: int
    time_us: int | None

    def as_dict(self, origin_us: int | None) -> dict:
        t_ms = None
        if self.time_us is not None and origin_us is not None:
            t_ms = round((self.time_us - origin_us) / 1000.0, 4)
        return {"phase": self.phase, "step": self.step, "event_index": self.event_index, "t_ms": t_ms}


def optimizer_ranges(annotations: list[dict] | None) -> list[tuple[int, int]]:
    """(start_us, end_us) of every Optimizer.* annotation pair, sorted."""
    ranges, open_starts = [], {}
    for note in annotations or []:
        name, stage, time_us = note.get("name", ""), note.get("stage"), note.get("time_us")
        if not name.startswith("Optimizer.") or time_us is None:
            continue
        if stage == "START":
            open_starts[name] = time_us
        elif stage == "END" and name in open_starts:
            ranges.append((open_starts.pop(name), time_us))
    return sorted(ranges)


def _inside(ranges: list[tuple[int, int]], starts: list[int], time_us: int | None) -> bool:
    if time_us is None or not ranges:
        return False
    position = bisect.bisect_right(starts, time_us) - 1
    return position >= 0 and time_us <= ranges[position][1]


def assign_phases(trace: list[dict], stacks: StackCache, annotations: list[dict] | None = None):
    """Per event: (phases, steps) lists, plus the PhaseMark at every change of phase."""
    ranges = optimizer_ranges(annotations)
    starts = [start for start, _ in ranges]
    phases: list[str] = []
    steps: list[int] = []
    marks: list[PhaseMark] = []
    current, step = UNKNOWN, 0
    for index, event in enumerate(trace):
        time_us = event.get("time_us")
        evidence: str | None
        if _inside(ranges, starts, time_us):
            evidence = "optimizer"
        else:
            evidence = stacks.summary(event.get("frames")).phase_evidence
        if evidence and evidence != current:
            if evidence == "forward" and current in ("backward", "optimizer"):
                step += 1
            current = evidence
            marks.append(PhaseMark(current, step, index, time_us))
        phases.append(current)
        steps.append(step)
    return phases, steps, marks


def step_words(moment: dict, recorded_steps: int | None) -> str:
    """"backward of the 1st of 2 recorded steps", or why the step is not known."""
    phase, step = moment.get("phase"), moment.get("step")
    if phase in (None, BEFORE_RECORDING):
        return "before recording began (no phase or step recorded)"
    if phase == UNKNOWN or step is None:
        return "an unknown phase and step (neither stack frames nor Optimizer.* annotations tell)"
    if recorded_steps == 1:
        return f"{phase} of the one recorded step"
    if recorded_steps is None:
        return f"{phase} of the {ordinal(step + 1)} recorded step"
    return f"{phase} of the {ordinal(step + 1)} of {recorded_steps} recorded steps"
