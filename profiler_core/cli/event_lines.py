"""Events as the dim progress lines on stderr that `sysprof run` and `sysprof attach` print as a run goes."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core import events
from sysprof.profiler_core.units import format_ms

stderr_console = Console(stderr=True, highlight=False)


def _say(text: str) -> None:
    """A progress line; a terminal that hung up (EIO) or a closed pipe must not stop the run it reports on."""
    try:
        stderr_console.print(text)
    except OSError:
        pass


def _step_progress(event: dict) -> None:
    kind = event["event"]
    if kind == events.HELLO:
        env = event["env"]
        _say(f"[dim]runner on {env['device_type']} ({env.get('device_name')}), torch {env['torch_version']}[/]")
    elif kind == events.COMPILE:
        _say(f"[dim]compiled in {event['seconds']:.1f} s[/]")
    elif kind in (events.WARMUP_STEP, events.STEP):
        label = "warm-up" if kind == events.WARMUP_STEP else "step"
        phases = " ".join(f"{p} {format_ms(ms)}" for p, ms in event["phases_ms"].items())
        _say(f"[dim]{label} {event['index']}: {format_ms(event['wall_ms'])} ({phases})[/]")


def print_run_event(event: dict) -> None:
    if event.get("pass"):
        return  # profiled and memory passes: their step times are not the step times
    if event["event"] == events.NOTICE:
        _say(f"[yellow]{escape(event['message'])}[/]")
    elif event["event"] == events.STAGE and event["name"] in ("profiling", "analysing", "memory"):
        _say(f"[dim]{event['name']}…[/]")
    else:
        _step_progress(event)


def print_study_event(event: dict) -> None:
    if event["event"] == events.CELL:
        _say(f"[dim]cell {event['done'] + 1}: {escape(event['label'])}[/]")
    elif event["event"] == events.CELL_DONE:
        outcome = events.cell_outcome(event["label"], event["status"], event.get("reason", ""))
        _say(f"[dim]{escape(outcome)} ({event['done']}/{event['pending']})[/]")


def print_event(event: dict) -> None:
    """A run's or a study's event, whichever it is."""
    (print_study_event if event["event"] in events.STUDY_EVENTS else print_run_event)(event)
