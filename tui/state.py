"""RunState: everything the screens show about one run, updated only by applying runner events."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RunState:
    stage: str = "idle"  # idle → starting → build → compile → warmup → measured → finished | failed
    run_dir: str | None = None
    env: dict | None = None
    warmup_steps: tuple[dict, ...] = ()
    steps: tuple[dict, ...] = ()
    planned_steps: int = 0
    compile_s: float | None = None
    summary: dict | None = None
    error: dict | None = None

    @property
    def running(self) -> bool:
        return self.stage not in ("idle", "finished", "failed")

    def apply(self, event: dict) -> "RunState":
        handler = _HANDLERS.get(event.get("event"))
        return handler(self, event) if handler else self


def _hello(state: RunState, event: dict) -> RunState:
    return replace(state, stage="build", env=event.get("env"), run_dir=event.get("run_dir", state.run_dir))


def _stage(state: RunState, event: dict) -> RunState:
    planned = event.get("total", state.planned_steps) if event["name"] == "measured" else state.planned_steps
    return replace(state, stage=event["name"], planned_steps=planned)


def _step(state: RunState, event: dict) -> RunState:
    if event["event"] == "warmup_step":
        return replace(state, warmup_steps=state.warmup_steps + (event,))
    return replace(state, steps=state.steps + (event,))


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
    "finished": _finished,
    "failed": _failed,
}
