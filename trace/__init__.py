"""sysprof.trace: time your own training loop, in the run directory format the rest of sysprof reads.

    from sysprof import trace
    tracker = trace.start(name="my-run", tokens_per_step=batch * ctx)
    for batch in loader:
        with tracker.step() as step:
            with tracker.phase("data"): batch = next(it)
            with tracker.phase("forward"): loss = model(batch)
            with tracker.phase("backward"): loss.backward()
            with tracker.phase("optimizer"): opt.step(); opt.zero_grad()
            step.record(loss=loss)

CUDA events per phase (never a wait for the GPU inside the loop), NVTX ranges, memory peaks per phase (every 10th
step), tokens/s, the loss. The run is finished when the script ends (or at tracker.finish()); an exception that
ends the script is written into the run with its traceback. SYSPROF_TRACE=0 (or enabled=False) gives a tracker
that does nothing.
"""
from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

from sysprof.trace.null import NullTracker
from sysprof.trace.tracker import StepHandle, Tracker

DEFAULT_WARMUP = 5  # compile, autotuning and the allocator's first growth happen in the first steps
DEFAULT_MEMORY_EVERY = 10  # memory peaks per phase on every 10th step: the allocator's statistics are not free

_started: Tracker | None = None


def start(name: str = "trace", runs_dir: str | Path | None = None, tokens_per_step: int | None = None,
          warmup: int = DEFAULT_WARMUP, enabled: bool | None = None, device: str | None = None,
          memory_every: int = DEFAULT_MEMORY_EVERY) -> Tracker | NullTracker:
    """A tracker writing a new run directory under the runs root (--runs-dir's default); NullTracker when disabled
    or when it cannot start (said once on stderr: the job goes on). device: "cuda" or "cpu" to say which clock
    times the loop; by default CUDA events when the script has used CUDA by its first step."""
    global _started
    if enabled is False or (enabled is None and os.environ.get("SYSPROF_TRACE", "1") == "0"):
        return NullTracker()
    if _started is not None:
        print(f"sysprof trace: already started ({_started.run_dir}); this start returns the same tracker",
              file=sys.stderr)
        return _started
    from sysprof.trace.starting import new_tracker

    tracker = new_tracker(name, runs_dir, tokens_per_step, warmup, device, max(1, memory_every))
    if isinstance(tracker, Tracker):
        _started = tracker
        _finish_at_exit(tracker)
    return tracker


def _finish_at_exit(tracker: Tracker) -> None:
    """The run ends with the script: at exit, with the exception that ended it when one did."""
    previous = sys.excepthook

    def record_then_report(kind, error, traceback) -> None:
        tracker.finish(error)
        previous(kind, error, traceback)
    sys.excepthook = record_then_report
    atexit.register(tracker.finish)


__all__ = ["NullTracker", "StepHandle", "Tracker", "start"]
