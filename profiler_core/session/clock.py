"""Where a pass's seconds go, on the session's own clock: from the process start to each stage its runner announces,
to its end event, to the process's exit (under nsys, the time after the end event is the report being written)."""
from __future__ import annotations

import time

from sysprof.profiler_core.base import events

# The keys of a breakdown, in the order the work happens (stage names are the runner's).
PASS_PARTS = ("start", "held", "build", "compile", "warmup", "measured", "exit")


class PassClock:
    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = [("start", time.monotonic())]

    def saw(self, event: dict) -> None:
        if event["event"] == events.STAGE and event.get("name") in PASS_PARTS:
            self.marks.append((event["name"], time.monotonic()))
        elif event["event"] in events.END_EVENTS:
            self.marks.append(("exit", time.monotonic()))

    def stop(self) -> dict[str, float]:
        """Seconds from each mark to the next, named by the first (PASS_PARTS), and the pass's total."""
        self.marks.append(("stopped", time.monotonic()))
        seconds: dict[str, float] = {}
        for (name, started), (_, ended) in zip(self.marks, self.marks[1:]):
            seconds[name] = seconds.get(name, 0.0) + ended - started
        seconds["total"] = self.marks[-1][1] - self.marks[0][1]
        return seconds


def profiled_breakdown(clean: dict[str, float], profiled: dict[str, float], backend: dict[str, float],
                       analysis_s: float) -> dict[str, float]:
    """Seconds of a run with a profiled pass, by step: the clean pass whole, then the profiled part (the runner under
    the profiler, stage by stage from its release where it was started early and held; the export; the analysis;
    the wait for work left beside it). Rounded to ms. started_early: how long it was held, beside the clean pass."""
    export_s = backend.get("export", 0.0)
    parts = {"clean_pass": clean.get("total", 0.0),
             **({"started_early": profiled["started_early"]} if "started_early" in profiled else {}),
             **{f"profiled_{name}": profiled[name] for name in PASS_PARTS if name in profiled},
             "export": export_s, "analysis": max(analysis_s - export_s, 0.0),
             "stats": backend.get("stats", 0.0), "stats_wait": backend.get("stats_wait", 0.0),
             "profiled_total": profiled.get("total", 0.0) + analysis_s + backend.get("stats_wait", 0.0)}
    return {name: round(value, 3) for name, value in parts.items()}
