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
4. A traced loop's recorded steps name their own phases: the tracker opens a `sysprof.phase:NAME`
   record_function range around each phase (PHASE_ANNOTATION), and every event from one's start to the next's
   is in that phase (data, eval, or any phase the loop names). This is the loop's own word, so it comes first.

A new step begins whenever forward (or a traced loop's data phase) starts after backward or optimizer.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from sysprof.profiler_core.base.units import ordinal

from .frames import StackCache

BEFORE_RECORDING = "before_recording"
PHASE_ANNOTATION = "sysprof.phase:"  # the record_function range a traced loop opens around a recorded phase
STEP_OPENERS = ("forward", "data")
# The loop's own phase names the analysis knows (its rules and step counting): a range of another name (a loop's
# "fwd" or "train_step") is left to the stack frames, as if the loop had named none.
KNOWN_PHASES = ("data", "forward", "backward", "optimizer", "eval")
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


def annotated_ranges(annotations: list[dict] | None) -> list[tuple[int, int, str]]:
    """(start_us, end_us, name) of every START/END annotation pair that names a phase, sorted: a traced loop's
    `sysprof.phase:NAME` ranges, and torch's Optimizer.* ranges."""
    ranges, open_starts = [], {}
    for note in annotations or []:
        name, stage, time_us = note.get("name", ""), note.get("stage"), note.get("time_us")
        if not name.startswith((PHASE_ANNOTATION, "Optimizer.")) or time_us is None:
            continue
        if stage == "START":
            open_starts[name] = time_us
        elif stage == "END" and name in open_starts:
            ranges.append((open_starts.pop(name), time_us, name))
    return sorted(ranges)


def has_loop_phases(annotations: list[dict] | None) -> bool:
    return any(str(note.get("name", "")).removeprefix(PHASE_ANNOTATION) in KNOWN_PHASES
               for note in annotations or [] if str(note.get("name", "")).startswith(PHASE_ANNOTATION))


class RangeLookup:
    """The annotated phase of an event's time: inside one of a traced loop's own ranges, its phase; inside torch's
    Optimizer.* range (zero_grad at the top of a loop, between two of the loop's phases), optimizer; between two of
    the loop's ranges (the batch moved to the GPU after the data phase, before forward), the phase last opened."""

    def __init__(self, ranges: list[tuple[int, int, str]]):
        own = [(start, end, name.removeprefix(PHASE_ANNOTATION)) for start, end, name in ranges
               if name.startswith(PHASE_ANNOTATION)]
        self.own = [r for r in own if r[2] in KNOWN_PHASES]
        self.optimizer = [(start, end, "optimizer") for start, end, name in ranges if name.startswith("Optimizer.")]
        self.own_starts = [start for start, _, _ in self.own]
        self.optimizer_starts = [start for start, _, _ in self.optimizer]

    def phase(self, time_us: int | None) -> str | None:
        if time_us is None:
            return None
        own = _latest(self.own, self.own_starts, time_us)
        if own is not None and time_us <= own[1]:
            return own[2]
        inside = _latest(self.optimizer, self.optimizer_starts, time_us)
        if inside is not None and time_us <= inside[1]:
            return "optimizer"
        return own[2] if own is not None else None


def _latest(ranges: list[tuple[int, int, str]], starts: list[int], time_us: int) -> tuple[int, int, str] | None:
    position = bisect.bisect_right(starts, time_us) - 1
    return ranges[position] if position >= 0 else None


def assign_phases(trace: list[dict], stacks: StackCache, annotations: list[dict] | None = None):
    """Per event: (phases, steps) lists, plus the PhaseMark at every change of phase."""
    lookup = RangeLookup(annotated_ranges(annotations))
    phases: list[str] = []
    steps: list[int] = []
    marks: list[PhaseMark] = []
    current, step = UNKNOWN, 0
    for index, event in enumerate(trace):
        time_us = event.get("time_us")
        evidence = lookup.phase(time_us) or stacks.summary(event.get("frames")).phase_evidence
        if evidence and evidence != current:
            if evidence in STEP_OPENERS and current in ("backward", "optimizer"):
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
