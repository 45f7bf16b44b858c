"""How long the runner's main thread waited for a CPU: the kernel's run-queue delay (/proc/thread-self/schedstat).

Why: on a shared node another process on the same cores delays the thread that launches the forward and the
optimizer; a launch-bound step then grows by what the thread waited, and the GPU's own readings show nothing.
The delay is the scheduler's own count, so it names host load as the cause where a sampled load average cannot
tell which rank it hit. One pread of an open file per reading (a few microseconds), twice a step.
"""
from __future__ import annotations

import os

SCHEDSTAT = "/proc/thread-self/schedstat"  # "<ns on cpu> <ns waiting on a run queue> <timeslices>"


class RunQueueClock:
    """The run-queue delay of the thread that built it (opened there), in ms; None where the kernel keeps none."""

    def __init__(self) -> None:
        try:
            self.fd: int | None = os.open(SCHEDSTAT, os.O_RDONLY)
        except OSError:
            self.fd = None

    def waited_ms(self) -> float | None:
        if self.fd is None:
            return None
        try:
            return int(os.pread(self.fd, 128, 0).split()[1]) / 1e6
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
