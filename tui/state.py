"""RunState: everything the screens show about one run, updated only by applying runner events.

Steps of the profiled and memory passes (events with a "pass" key) are kept apart from the clean steps:
profiled step times are inflated by the profiler and must never be shown as the step times.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

STAGES = ("build", "compile", "warmup", "measured", "profiling", "analysing", "memory")
TERMINAL = ("idle", "finished", "failed")


@dataclass(frozen=True)
class RunState:
    stage: str = "idle"  # idle → starting → build → compile → warmup → measured → profiling → … → finished | failed
    run_dir: str | None = None
    env: dict | None = None
    config: dict | None = None
    warmup_steps: tuple[dict, ...] = ()
    steps: tuple[dict, ...] = ()
    pass_steps: tuple[dict, ...] = ()  # steps of the profiled / memory passes, each with its "pass"
    stage_total: int | None = None
    planned_steps: int = 0
    compile_s: float | None = None
    notices: tuple[str, ...] = ()
    analyses: tuple[tuple[str, str], ...] = ()  # (kind, path) in arrival order
    summary: dict | None = None
    error: dict | None = None

    @property
    def running(self) -> bool:
        return self.stage not in TERMINAL

    def profiled_steps(self) -> tuple[dict, ...]:
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
        return 0, None

    def apply(self, event: dict) -> RunState:
        if event.get("pass") and event.get("event") not in ("step", "warmup_step"):
            return self  # a later pass's hello/stages must not move the clean run's directory or stage
        handler = _HANDLERS.get(event.get("event"))
        return handler(self, event) if handler else self


def _hello(state: RunState, event: dict) -> RunState:
    return replace(state, stage="build", env=event.get("env"), config=event.get("config", state.config),
                   run_dir=event.get("run_dir", state.run_dir))


def _stage(state: RunState, event: dict) -> RunState:
    total = event.get("total")
    planned = total if event["name"] == "measured" and total else state.planned_steps
    return replace(state, stage=event["name"], stage_total=total, planned_steps=planned)


def _step(state: RunState, event: dict) -> RunState:
    if event.get("pass"):
        return replace(state, pass_steps=state.pass_steps + (event,))
    if event["event"] == "warmup_step":
        return replace(state, warmup_steps=state.warmup_steps + (event,))
    return replace(state, steps=state.steps + (event,))


def _notice(state: RunState, event: dict) -> RunState:
    return replace(state, notices=state.notices + (str(event.get("message", "")),))


def _analysis(state: RunState, event: dict) -> RunState:
    return replace(state, analyses=state.analyses + ((event.get("kind", "?"), event.get("path", "")),))


def _finished(state: RunState, event: dict) -> RunState:
    return replace(state, stage="finished", summary=event.get("summary"))


def _failed(state: RunState, event: dict) -> RunState:
    error = {key: event.get(key) for key in ("kind", "message", "phase", "peak_allocated_bytes")}
    return replace(state, stage="failed", summary=event.get("summary"), error=error)


_HANDLERS = {
    "hello": _hello,
    "stage": _stage,
    "compile": lambda state, event: replace(state, compile_s=event["seconds"]),
    "warmup_step": _step,
    "step": _step,
    "notice": _notice,
    "analysis": _analysis,
    "finished": _finished,
    "failed": _failed,
}
