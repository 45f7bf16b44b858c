"""Events as the dim progress lines on stderr that `sysprof run` and `sysprof attach` print as a run goes."""
from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.units import format_ms

stderr_console = Console(stderr=True, highlight=False)


def _say(text: str) -> None:
    """A progress line; a terminal that hung up (EIO) or a closed pipe must not stop the run it reports on."""
    try:
        stderr_console.print(text)
    except OSError:
        pass


def _banner(env: dict) -> str:
    return f"[dim]runner on {env['device_type']} ({env.get('device_name')}), torch {env['torch_version']}[/]"


def _step_progress(event: dict) -> None:
    kind = event["event"]
    if kind == events.COMPILE:
        _say(f"[dim]compiled in {event['seconds']:.1f} s[/]")
    elif kind in (events.WARMUP_STEP, events.STEP):
        label = "warm-up" if kind == events.WARMUP_STEP else "step"
        phases = " ".join(f"{p} {format_ms(ms)}" for p, ms in event["phases_ms"].items())
        _say(f"[dim]{label} {event['index']}: {format_ms(event['wall_ms'])} ({phases})[/]")


class RunEventPrinter:
    """A run's events as progress lines, one printer per run followed.

    The runner's banner (device, torch) waits until the model is built: a run refused for its configuration (a
    factory that returns no module) ends in one error line with nothing before it, while a run that goes on, or
    fails for another reason (an OOM, the user's forward raising), still shows the facts the banner gives."""

    def __init__(self) -> None:
        self.banner: str | None = None

    def __call__(self, event: dict) -> None:
        if event.get("pass"):
            return  # profiled and memory passes: their step times are not the step times
        kind = event["event"]
        if kind == events.HELLO:
            self.banner = _banner(event["env"])
            return
        if not _still_building(event):
            self.say_banner()
        if kind == events.NOTICE:
            _say(f"[yellow]{escape(event['message'])}[/]")
        elif kind == events.STAGE and event["name"] in ("profiling", "analysing", "memory"):
            _say(f"[dim]{event['name']}…[/]")
        else:
            _step_progress(event)

    def say_banner(self) -> None:
        banner, self.banner = self.banner, None
        if banner is not None:
            _say(banner)


def _still_building(event: dict) -> bool:
    """Events that do not yet say the run started for real: the build stage, or an end that refused the config."""
    if event["event"] == events.STAGE:
        return event["name"] == "build"
    return event["event"] == events.FAILED and event.get("kind") == events.CONFIG


def print_study_event(event: dict) -> None:
    if event["event"] == events.CELL:
        _say(f"[dim]cell {event['done'] + 1}: {escape(event['label'])}[/]")
    elif event["event"] == events.CELL_DONE:
        outcome = events.cell_outcome(event["label"], event["status"], event.get("reason", ""))
        _say(f"[dim]{escape(outcome)} ({event['done']}/{event['pending']})[/]")


def event_printer() -> Callable[[dict], None]:
    """A printer for one followed directory's events, a run's or a study's, whichever they are."""
    print_run_event = RunEventPrinter()
    return lambda event: (print_study_event if event["event"] in events.STUDY_EVENTS else print_run_event)(event)
