"""Run control: every run or study process a front end starts or re-attaches to, started, followed, cancelled and
reaped here, once. The app adapts it (its workers await `follow`); `sysprof attach` follows with the same `drain`.

Each process gets its own session (process group, no controlling terminal), so a cancel reaches nsys and the
runner it wraps, the app's own Ctrl-C handling never does, and a dropped SSH session (SIGHUP to the terminal's
processes) does not reach it. No process writes to a pipe the app holds: a run writes its events to a file in its
directory, a study's stdout goes to a file; the app follows the file. So the process outlives the app, and the
next app follows a run the same way (re-attach). stderr goes to a log file.

Plain `subprocess.Popen`, not asyncio's: an asyncio transport kills its child when it is closed, and the app
closing must leave the child running.
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sysprof.profiler_core.documents.liveness import LiveProcess, live_process
from sysprof.profiler_core.session.live import EventFollower
from sysprof.profiler_core.session.process import CANCEL_GRACE_S, signal_group

# The slots are the kinds of process (liveness.RUN, STUDY): at most one run and one study at a time.
# How often a followed event file is read, and so at most how often the screen redraws for a run: the events of
# one read arrive as one batch, one redraw. 4 Hz keeps the app's CPU off the cores the measured steps use.
POLL_S = 0.25
EventBatch = Callable[[list[dict]], None]


@dataclass(frozen=True)
class Finished:
    """A short process run to its end (the inspector, a report): its exit code and what it wrote."""
    returncode: int
    stdout: str
    stderr: str


class Child:
    """A process this app started."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.pid = process.pid  # its own group: start_new_session

    def alive(self) -> bool:
        return self.process.poll() is None

    async def wait(self) -> int | None:
        while self.alive():
            await asyncio.sleep(POLL_S)
        return self.process.returncode


class Attached:
    """A process an earlier app (or `sysprof run` in another terminal) started: known by its directory's live.json."""

    def __init__(self, live: LiveProcess):
        self.directory, self.pid, self.here = live.directory, live.pgid, live.here

    def alive(self) -> bool:
        live = live_process(self.directory)
        return live is not None and live.alive

    async def wait(self) -> int | None:
        while self.alive():
            await asyncio.sleep(POLL_S)
        return None  # not our child: its exit code is not ours to read


def drain(process: Child | Attached, follower: EventFollower, on_events: EventBatch) -> bool:
    """One look at a followed process: what it wrote since the last look goes to on_events (one batch); whether it
    is still alive. Liveness is read before the file, so what it wrote before it ended is never missed."""
    alive = process.alive()
    batch = follower.read_new()
    if batch:
        on_events(batch)
    return alive


class ProcessControl:
    def __init__(self) -> None:
        self.processes: dict[str, Child | Attached] = {}

    def running(self, slot: str | None = None) -> bool:
        """Is the slot's process (any process, without a slot) still alive?"""
        slots = [slot] if slot else list(self.processes)
        return any(s in self.processes and self.processes[s].alive() for s in slots)

    def pid(self, slot: str) -> int | None:
        process = self.processes.get(slot)
        return process.pid if process else None

    def start(self, slot: str, argv: list[str], stderr_path: Path, stdout_path: Path | None) -> Child:
        """argv in a session of its own; stdout to stdout_path (None: nowhere), stderr appended to stderr_path."""
        if self.running(slot):
            raise RuntimeError(f"a {slot} is already running")
        with stderr_path.open("ab") as stderr_log, \
                (stdout_path.open("ab") if stdout_path else open(os.devnull, "wb")) as stdout:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr_log,
                                       start_new_session=True)
        self.processes[slot] = child = Child(process)
        return child

    async def run_followed(self, slot: str, argv: list[str], stderr_path: Path, events_path: Path,
                           on_events: EventBatch, kinds: tuple[str, ...],
                           stdout_path: Path | None = None) -> int | None:
        """Start argv and hand what it writes to events_path to on_events, a batch per read, until it exits; its
        exit code."""
        child = self.start(slot, argv, stderr_path, stdout_path)
        await self.follow(child, EventFollower(events_path, kinds), on_events)
        return child.process.returncode

    async def attach(self, slot: str, live: LiveProcess, events_path: Path, on_events: EventBatch,
                     kinds: tuple[str, ...]) -> None:
        """Follow a process started before this app: everything it wrote so far first, then as it comes."""
        if self.running(slot):
            raise RuntimeError(f"a {slot} is already running")
        self.processes[slot] = attached = Attached(live)
        await self.follow(attached, EventFollower(events_path, kinds), on_events)

    @staticmethod
    async def follow(process: Child | Attached, follower: EventFollower, on_events: EventBatch) -> None:
        while drain(process, follower, on_events):
            await asyncio.sleep(POLL_S)

    async def cancel(self, slot: str) -> None:
        """SIGINT to the slot's process group (the session saves what finished), then SIGKILL if it lingers."""
        process = self.processes.get(slot)
        if process is None or not process.alive():
            return
        if isinstance(process, Attached) and not process.here:
            raise ProcessLookupError("it runs on another host (its directory is on a shared file system): "
                                     "cancel it there")
        signal_group(process.pid, signal.SIGINT)
        try:
            # Longer than the session gives its runner, so the session can still write its summary.
            await asyncio.wait_for(process.wait(), 2 * CANCEL_GRACE_S)
        except asyncio.TimeoutError:
            signal_group(process.pid, signal.SIGKILL)
            await process.wait()


async def run_to_end(argv: list[str], timeout_s: float) -> Finished:
    """A short process in a session of its own, waited for: OSError where it cannot start, TimeoutError past
    timeout_s. Stopped with its whole group when it overruns or its waiter is cancelled (the answer went stale)."""
    process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                   start_new_session=True)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout_s)
    except (asyncio.CancelledError, TimeoutError, asyncio.TimeoutError):
        signal_group(process.pid, signal.SIGKILL)
        raise
    return Finished(process.returncode or 0, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
