"""How far a sweep or study has got: dim lines on stderr for a person, or, with `--events`, the STUDY_EVENTS of
profiler_core.base.events on stdout for the app. Every kind counts cells and estimates the time left the same way.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import RunConfig, model_label
from sysprof.profiler_core.documents.liveness import STUDY
from sysprof.profiler_core.session.live import EventLog, Heartbeat

ALWAYS_NAMED = ("model", "mode")  # a line that names other fields and not these reads as if they did not vary


def config_label(config: dict) -> str:
    """The model and the mode, then the fields that differ from the defaults: what tells one cell from another (a
    config read back from JSON holds lists where RunConfig holds tuples)."""
    defaults, shown = RunConfig().to_dict(), dict(config)
    if shown.get("model_factory"):  # the user's model by its label, as directories name it, not by its path
        shown["model"] = model_label(shown["model"], shown.pop("model_factory"))
    changed = {k: v for k, v in shown.items()
               if k in ALWAYS_NAMED or (tuple(v) if isinstance(v, list) else v) != defaults.get(k)}
    return " ".join(f"{k}={','.join(v) if isinstance(v, (list, tuple)) else v}"  # model_args=n_layer=1,bias=false
                    for k, v in changed.items())


class Progress:
    def __init__(self, as_events: bool):
        self.as_events = as_events
        self.console = Console(stderr=True, highlight=False)
        self.started, self.done, self.pending, self.label = time.perf_counter(), 0, 0, ""
        # each started cell's label: a shared process starts every cell of its round before any ends
        self.labels: dict[int, str] = {}
        self.log = EventLog(to_stdout=as_events)  # and to the study's event file once recorded() opens it

    @contextmanager
    def recorded(self, study_dir: Path) -> Iterator[Progress]:
        """While the study runs: its events in study_dir's event file and the directory marked live, so that
        `sysprof ps` lists it and the app re-attaches to it after a dropped connection."""
        self.log.open(study_dir)
        heartbeat = Heartbeat(study_dir, STUDY).start()
        try:
            yield self
        finally:
            heartbeat.stop()
            self.log.close()

    def _emit(self, event: dict, text: str | None, style: str = "dim") -> None:
        self.log(event)
        if not self.as_events and text:
            self.console.print(f"[{style}]{text}[/]", soft_wrap=True)  # a log line stays one line when piped

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        return (time.perf_counter() - self.started) / self.done * (self.pending - self.done)

    def study(self, kind: str, study_dir: Path, cells: int, pending: int) -> None:
        self.started, self.done, self.pending = time.perf_counter(), 0, pending
        self._emit({"event": events.STUDY, "kind": kind, "dir": str(study_dir), "cells": cells, "pending": pending},
                   f"{study_dir}: {cells} cells, {pending} to run")

    def cell_started(self, index: int, label: str) -> None:
        self.label = self.labels[index] = label
        eta = self.eta_s()
        self._emit({"event": events.CELL, "index": index, "label": label, "done": self.done, "pending": self.pending,
                    "eta_s": eta},
                   f"cell {self.done + 1}/{self.pending}: {label}" + (f" · ETA {eta / 60:.1f} min" if eta else ""))

    def cell_done(self, index: int, status: str, label: str | None = None, reason: str = "",
                  pending: int | None = None) -> None:
        self.done += 1
        self.pending = self.pending if pending is None else pending  # a group an OOM ended runs no more processes
        label = label or self.labels.get(index, self.label)
        self._emit({"event": events.CELL_DONE, "index": index, "label": label, "status": status, "reason": reason,
                    "done": self.done, "pending": self.pending, "eta_s": self.eta_s()},
                   escape(events.cell_outcome(label, status, reason)), "dim" if status == events.OK else "yellow")

    def sweep_listener(self, kind: str, study_dir: Path) -> Callable[[dict], None]:
        """An on_event for sweep.run."""
        def on_event(event: dict) -> None:
            if event["event"] == events.STUDY:
                self.study(kind, study_dir, event["cells"], event["pending"])
            elif event["event"] == events.CELL:
                repeats = event["config"].get("repeats", 1)
                process = f" · process {event.get('repeat', 1)}/{repeats}" if repeats > 1 else ""
                self.cell_started(event["index"], config_label(event["config"]) + process)
            elif event["event"] == events.CELL_DONE:
                self.cell_done(event["index"], event["status"], reason=event.get("reason", ""),
                               pending=event.get("pending"))
        return on_event
