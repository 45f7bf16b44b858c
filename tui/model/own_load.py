"""The app's own CPU while a run's steps are measured: what the screen takes from the host it measures on.

A run started from the app notes it in the run directory (runs.note_app_load) next to the fact that the app started it,
so numbers taken with the app watching can be told from the CLI's."""
from __future__ import annotations

import time

MEASURED = "measured"


class MeasuredLoad:
    def __init__(self) -> None:
        self.since: tuple[float, float] | None = None  # (process CPU s, wall s) when measuring began
        self.cpu_s = self.wall_s = 0.0

    def stage(self, stage: str) -> None:
        """Follow the run's stage: the clock runs while it is "measured"."""
        if stage == MEASURED and self.since is None:
            self.since = (time.process_time(), time.monotonic())
        elif stage != MEASURED and self.since is not None:
            cpu, wall = self.since
            self.cpu_s += time.process_time() - cpu
            self.wall_s += time.monotonic() - wall
            self.since = None

    def percent(self) -> float | None:
        """CPU of the app's process over the measured steps' wall time, in % of one core."""
        return 100 * self.cpu_s / self.wall_s if self.wall_s else None

