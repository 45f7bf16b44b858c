"""Events as the dim progress lines on stderr that `sysprof run` and `sysprof attach` print as a run goes."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from profiler_core import events
from profiler_core.render.units import format_ms

stderr_console = Console(stderr=True, highlight=False)


def _step_progress(event: dict) -> None:
    kind = event["event"]
    if kind == events.HELLO:
        env = event["env"]
        stderr_console.print(f"[dim]runner on {env['device_type']} ({env.get('device_name')}), torch {env['torch_version']}[/]")
    elif kind == events.COMPILE:
        stderr_console.print(f"[dim]compiled in {event['seconds']:.1f} s[/]")
    elif kind in (events.WARMUP_STEP, events.STEP):
        label = "warm-up" if kind == events.WARMUP_STEP else "step"
        phases = " ".join(f"{p} {format_ms(ms)}" for p, ms in event["phases_ms"].items())
        stderr_console.print(f"[dim]{label} {event['index']}: {format_ms(event['wall_ms'])} ({phases})[/]")


def print_run_event(event: dict) -> None:
    if event.get("pass"):
        return  # profiled and memory passes: their step times are not the step times
    if event["event"] == events.NOTICE:
        stderr_console.print(f"[yellow]{escape(event['message'])}[/]")
    elif event["event"] == events.STAGE and event["name"] in ("profiling", "analysing", "memory"):
        stderr_console.print(f"[dim]{event['name']}…[/]")
    else:
        _step_progress(event)


def print_study_event(event: dict) -> None:
    if event["event"] == events.CELL:
        stderr_console.print(f"[dim]cell {event['done'] + 1}: {escape(event['label'])}[/]")
    elif event["event"] == events.CELL_DONE:
        stderr_console.print(f"[dim]{escape(event['label'])}: {event['status']} ({event['done']}/{event['pending']})[/]")


def print_event(event: dict) -> None:
    """A run's or a study's event, whichever it is."""
    (print_study_event if event["event"] in events.STUDY_EVENTS else print_run_event)(event)
