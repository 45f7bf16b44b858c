"""Runs and studies that outlive their viewer: the events in a file, the process named in another.

A dropped SSH session takes the app with it; the run must go on. So the process that drives a run or a study
(the session, `sysprof run`, `sysprof sweep|study`) writes every event to `session_events.jsonl` in its
directory as well as to its stdout, and a reader that went away (a closed pipe) never stops it. While it runs,
`live.json` names it (pid, process group, host) and its mtime is the heartbeat; it is removed when the process
ends. A live.json whose process is gone, or whose heartbeat stopped (a host reboot, kill -9 of the whole group),
means the process died: `settle_died` writes that down so nothing shows as running forever.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.documents.liveness import HEARTBEAT_S, RUN, LiveProcess
from sysprof.profiler_core.documents.study_plans import study_kind

EventSink = Callable[[Any], None]  # an event: a dict, or records.Event


class EventLog:
    """An event sink: one line per event to the directory's event file (once it is known) and to stdout.

    stdout is a pipe to whoever started the process; when that reader goes away, the pipe breaks and the
    process goes on writing the file only."""

    def __init__(self, directory: Path | None = None, to_stdout: bool = True):
        self.file: TextIO | None = None
        self.to_stdout = to_stdout
        if directory is not None:
            self.open(directory)

    def open(self, directory: Path) -> None:
        self.file = (directory / rundir.SESSION_EVENTS).open("a", buffering=1)

    def __call__(self, event: Any) -> None:
        line = json.dumps(event, separators=(",", ":"), default=str)
        if self.file is not None:
            try:
                self.file.write(line + "\n")
            except OSError:  # a full disk: the run fails on its own writes and says why; the events go on
                self.close()
        if self.to_stdout:
            try:
                print(line, flush=True)
            except (BrokenPipeError, ValueError, OSError):
                self.stop_stdout()

    def stop_stdout(self) -> None:
        """The reader is gone: later writes (and the flush at exit) go nowhere instead of failing."""
        self.to_stdout = False
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)

    def close(self) -> None:
        file, self.file = self.file, None
        if file is not None:
            try:
                file.close()
            except OSError:  # what was still buffered did not fit on the disk
                pass


class Heartbeat:
    """live.json for as long as the process runs: written on start, touched every HEARTBEAT_S, removed on stop."""

    def __init__(self, directory: Path, kind: str, config: dict | None = None):
        self.path = directory / rundir.LIVE
        self.record = {"pid": os.getpid(), "pgid": os.getpgrp(), "host": socket.gethostname(), "kind": kind,
                       "started_at": time.time(), "command": sys.argv, "config": config}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        rundir.write_json(self.path, self.record)
        self.thread.start()
        return self

    def _beat(self) -> None:
        while not self.stopped.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:  # the directory was removed under us: nothing left to mark
                return

    def stop(self) -> None:
        self.stopped.set()
        self.path.unlink(missing_ok=True)


@contextmanager
def recorded(directory: Path, kind: str, on_event: EventSink | None = None,
             config: dict | None = None) -> Iterator[EventSink]:
    """While the body runs: the directory is marked live, and the returned sink writes each event to the event
    file before handing it to on_event (the CLI's printer; None: stdout, as the session speaks to the app)."""
    log = EventLog(directory, to_stdout=on_event is None)
    heartbeat = Heartbeat(directory, kind, config).start()

    def sink(event: Any) -> None:
        log(event)
        if on_event is not None:
            on_event(event)
    try:
        yield sink
    finally:
        heartbeat.stop()
        log.close()


def settle_died(live: LiveProcess) -> str:
    """Write down that a directory's process died (a run gets a summary from its finished steps); one line."""
    when = time.strftime("%H:%M:%S", time.localtime(time.time() - live.heartbeat_age_s))
    if live.kind == RUN:
        line = _settle_run(live, when)
    else:
        line = f"{live.directory.name}: died (last heartbeat {when}); finished cells are kept"
        kind = study_kind(live.directory)
        if kind not in (None, "attention"):  # a sweep plan: it resumes (an advise's later stages too)
            line += f"; `sysprof {'advise' if kind == 'advise' else 'sweep'} --resume {live.directory}` runs the rest"
    (live.directory / rundir.LIVE).unlink(missing_ok=True)
    return line


def _settle_run(live: LiveProcess, when: str) -> str:
    from sysprof.profiler_core.base.config import ConfigError, RunConfig
    from sysprof.profiler_core.base.config_checks import type_problems
    from sysprof.profiler_core.session.process import mark_died

    try:
        manifest = rundir.read_json(live.directory / rundir.MANIFEST) or {}
        cfg = RunConfig.from_dict(manifest.get("config") or live.config or {})
        if type_problems(cfg):
            raise ConfigError("a damaged config")
    except (rundir.RunDirError, ConfigError, TypeError, AttributeError):  # a damaged manifest: the mark matters more
        cfg = RunConfig()
    summary = mark_died(live.directory, cfg, f"the run's process is gone (last heartbeat {when})")
    error = summary.get("error")
    return f"{live.directory.name}: {error['message'] if error else summary['status']}"


class EventFollower:
    """The events appended to a file since the last read; a line still being written waits for its newline."""

    def __init__(self, path: Path, kinds: tuple[str, ...] = events.EVENT_KINDS):
        self.path, self.kinds = path, kinds
        self.offset, self.partial = 0, b""

    def read_new(self) -> list[dict]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        return [event for event in (events.decode_line(line, self.kinds) for line in lines) if event is not None]
