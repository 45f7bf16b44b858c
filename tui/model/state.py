"""RunState: everything the screens show about one run, updated only by applying runner events.

Steps of the profiled and memory passes (events with a "pass" key) are kept apart from the clean steps:
profiled step times are inflated by the profiler and must never be shown as the step times.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from sysprof.profiler_core.api import events, numbers

if TYPE_CHECKING:
    from sysprof.profiler_core.api import RunError, RunSummary, StepRecord

STAGES = ("build", "compile", "warmup", "measured", "profiling", "analysing", "memory")
TERMINAL = ("idle", "finished", "failed")


@dataclass(frozen=True)
class RunState:
    stage: str = "idle"  # idle → starting → build → compile → warmup → measured → profiling → … → finished | failed
    run_dir: str | None = None
    env: dict | None = None
    config: dict | None = None
    warmup_steps: tuple[StepRecord, ...] = ()
    steps: tuple[StepRecord, ...] = ()
    pass_steps: tuple[StepRecord, ...] = ()  # steps of the profiled / memory passes, each with its "pass"
    stage_total: int | None = None
    planned_steps: int = 0
    compile_s: float | None = None
    flops_per_step: int | None = None  # the user's model's, counted by the runner (the built-in one's is exact)
    notices: tuple[str, ...] = ()
    analyses: tuple[tuple[str, str], ...] = ()  # (kind, path) in arrival order
    summary: RunSummary | None = None
    error: RunError | None = None

    @property
    def running(self) -> bool:
        return self.stage not in TERMINAL

    @property
    def state_name(self) -> str:
        """The run's state in the words every screen and the CLI use (events.RUN_STATES); not meant for idle."""
        if self.running:
            return events.run_state(None, running=True)
        if self.summary:
            return events.run_state(self.summary)
        if self.error:  # a failed event without a summary (a config the session refused)
            return events.run_state({"status": events.FAILED_STATUS, "error": self.error})
        return events.run_state({"status": events.OK} if self.stage == "finished" else None)

    def profiled_steps(self) -> tuple[StepRecord, ...]:
        return tuple(step for step in self.pass_steps if step.get("pass") == "profiled")

    def analysis_path(self, kind: str) -> str | None:
        """The latest path announced for kind ("kernels" | "memory"), if any."""
        return next((path for k, path in reversed(self.analyses) if k == kind), None)

    def stage_progress(self) -> tuple[int, int | None]:
        """(done, total) in the current stage, for the progress bar."""
        if self.stage == "warmup":
            return len(self.warmup_steps), self.stage_total
        if self.stage == "measured":
            return len(self.steps), self.stage_total or self.planned_steps or None
        if self.stage in ("profiling", "memory"):
            return sum(1 for s in self.pass_steps if s.get("kind") != "warmup"), self.stage_total
        if self.stage in ("finished", "failed"):  # the measured steps that finished, whatever ended the run
            return self.kept_steps, self.planned_steps or None
        return 0, None

    @property
    def kept_steps(self) -> int:
        """The measured steps the run kept: its summary's count once it ended (a cancel can stop the runner after a
        step was saved and before its event was sent, so the events may hold one fewer), else the steps seen."""
        step = numbers.phases_of(self.summary).get("step") or {}
        return max(len(self.steps), step.get("n") or 0)

    def apply(self, event: Mapping[str, Any]) -> RunState:
        if event.get("pass") and event.get("event") not in (events.STEP, events.WARMUP_STEP):
            return self  # a later pass's hello/stages must not move the clean run's directory or stage
        handler = _HANDLERS.get(event.get("event") or "")
        return handler(self, event) if handler else self


def _hello(state: RunState, event: Mapping[str, Any]) -> RunState:
    return replace(state, stage="build", env=event.get("env"), config=event.get("config", state.config),
                   run_dir=event.get("run_dir", state.run_dir))


def _stage(state: RunState, event: Mapping[str, Any]) -> RunState:
    total = event.get("total")
    planned = total if event["name"] == "measured" and total else state.planned_steps
    return replace(state, stage=event["name"], stage_total=total, planned_steps=planned)


def _step(state: RunState, event: Mapping[str, Any]) -> RunState:
    step = cast("StepRecord", event)  # a step event is a step record plus its "event" (and "pass") name
    if event.get("pass"):
        return replace(state, pass_steps=state.pass_steps + (step,))
    if event["event"] == events.WARMUP_STEP:
        return replace(state, warmup_steps=state.warmup_steps + (step,))
    return replace(state, steps=state.steps + (step,))


def _notice(state: RunState, event: Mapping[str, Any]) -> RunState:
    return replace(state, notices=state.notices + (str(event.get("message", "")),))


def _analysis(state: RunState, event: Mapping[str, Any]) -> RunState:
    return replace(state, analyses=state.analyses + ((event.get("kind", "?"), event.get("path", "")),))


def _finished(state: RunState, event: Mapping[str, Any]) -> RunState:
    return replace(state, stage="finished", summary=event.get("summary"))


def _failed(state: RunState, event: Mapping[str, Any]) -> RunState:
    # A failed event carries the run's error fields beside its name (events.finish_event).
    error = cast("RunError", {key: event.get(key) for key in ("kind", "message", "phase", "peak_allocated_bytes")})
    return replace(state, stage="failed", summary=event.get("summary"), error=error)


_HANDLERS: dict[str, Callable[[RunState, Mapping[str, Any]], RunState]] = {
    events.HELLO: _hello,
    events.STAGE: _stage,
    events.COMPILE: lambda state, event: replace(state, compile_s=event["seconds"]),
    events.MODEL: lambda state, event: replace(state, flops_per_step=event.get("flops_per_step")),
    events.WARMUP_STEP: _step,
    events.STEP: _step,
    events.NOTICE: _notice,
    events.ANALYSIS: _analysis,
    events.FINISHED: _finished,
    events.FAILED: _failed,
}
