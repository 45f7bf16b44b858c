"""Run the runner subprocess from the app's event loop and hand each event to a callback."""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

from profiler_core.api import CANCEL_GRACE_S, decode_line, events, signal_group

LINE_LIMIT = 1 << 20  # events are small, but a stray long line must not kill the reader


class RunnerClient:
    """One runner (or study) process: stream(on_event) until it exits; cancel() sends SIGINT, then kills."""

    def __init__(self, argv: list[str], stderr_path: Path, kinds: tuple[str, ...] = events.RUN_EVENTS):
        self.argv, self.stderr_path, self.kinds = argv, stderr_path, kinds
        self.process: asyncio.subprocess.Process | None = None

    async def stream(self, on_event: Callable[[dict], None]) -> int:
        with self.stderr_path.open("ab") as stderr_log:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdout=asyncio.subprocess.PIPE, stderr=stderr_log,
                limit=LINE_LIMIT, start_new_session=True)
            assert self.process.stdout is not None
            async for line in self.process.stdout:
                event = decode_line(line, self.kinds)
                if event is not None:
                    on_event(event)
            return await self.process.wait()

    async def cancel(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        signal_group(self.process.pid, signal.SIGINT)
        try:
            # Longer than the session gives its runner, so the session can still write its summary.
            await asyncio.wait_for(self.process.wait(), 2 * CANCEL_GRACE_S)
        except asyncio.TimeoutError:
            signal_group(self.process.pid, signal.SIGKILL)
            await self.process.wait()
