"""Every process the app starts, in one place: the run's session and a study's CLI are started, streamed,
cancelled and reaped here, and nowhere else.

Each process gets its own session (process group), so a cancel reaches nsys and the runner it wraps, and the
app's own Ctrl-C handling never does. Events arrive as lines on its stdout; its stderr goes to a log file.
"""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

from profiler_core.api import CANCEL_GRACE_S, decode_line, events, signal_group

RUN, STUDY = "run", "study"  # the slots: at most one run and one study at a time
LINE_LIMIT = 1 << 20  # events are small, but a stray long line must not kill the reader
EventSink = Callable[[dict], None]


class ProcessControl:
    def __init__(self) -> None:
        self.processes: dict[str, asyncio.subprocess.Process] = {}

    def running(self, slot: str | None = None) -> bool:
        """Is the slot's process (any process, without a slot) still alive?"""
        slots = [slot] if slot else list(self.processes)
        return any(s in self.processes and self.processes[s].returncode is None for s in slots)

    def pid(self, slot: str) -> int | None:
        process = self.processes.get(slot)
        return process.pid if process else None

    async def stream(self, slot: str, argv: list[str], stderr_path: Path, on_event: EventSink,
                     kinds: tuple[str, ...] = events.RUN_EVENTS) -> int:
        """Start argv in the slot and hand each event to on_event until it exits; its exit code."""
        if self.running(slot):
            raise RuntimeError(f"a {slot} is already running")
        with stderr_path.open("ab") as stderr_log:
            process = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=stderr_log, limit=LINE_LIMIT, start_new_session=True)
            self.processes[slot] = process
            assert process.stdout is not None
            async for line in process.stdout:
                event = decode_line(line, kinds)
                if event is not None:
                    on_event(event)
            return await process.wait()

    async def cancel(self, slot: str) -> None:
        """SIGINT to the slot's process group (the session saves what finished), then SIGKILL if it lingers."""
        process = self.processes.get(slot)
        if process is None or process.returncode is not None:
            return
        signal_group(process.pid, signal.SIGINT)
        try:
            # Longer than the session gives its runner, so the session can still write its summary.
            await asyncio.wait_for(process.wait(), 2 * CANCEL_GRACE_S)
        except asyncio.TimeoutError:
            signal_group(process.pid, signal.SIGKILL)
            await process.wait()

    def kill_all(self) -> None:
        """The last line of defence against orphans when the app goes away: kill every live group."""
        for process in self.processes.values():
            if process.returncode is None:
                signal_group(process.pid, signal.SIGKILL)
