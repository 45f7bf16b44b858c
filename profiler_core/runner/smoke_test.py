"""An arm's smoke test in a shared runner process (arms.py): its build, compile and warm-up, within a time bound.

What fails for a model fails here, in seconds, and what hangs (a compile that never ends, a user's forward that
waits forever) fails at the arm's bound: either way that arm ends with its reason and the other arms go on. The
bound is a signal, apart from the arms' bookkeeping, because it must reach into whatever Python code runs then.
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

from sysprof.profiler_core.runner.engine import Runner
from sysprof.profiler_core.runner.failures import StepFailure


class SmokeOverrun(BaseException):
    """Not an Exception: the `except Exception` of a user's code, or of the tool's own FLOP count, must not swallow
    it."""


def smoke_test(runner: Runner, seconds: float | None) -> None:
    """Build, compile and warm up, for at most `seconds` (None: no bound); an overrun is the arm's failure."""
    try:
        with _time_bound(seconds):
            runner.start()
            runner.warm_up()
    except SmokeOverrun as exc:
        raise StepFailure("error", str(exc), None, None) from None


@contextlib.contextmanager
def _time_bound(seconds: float | None) -> Iterator[None]:
    """SIGALRM after `seconds`, and every 5 s after it, raises in whatever Python code runs then (a compile's, a
    user's); a wait inside a C call ends when it returns to Python."""
    if not seconds or not hasattr(signal, "setitimer"):
        yield
        return

    armed = [True]

    def expired(signum: int, frame: object) -> None:
        if armed[0]:  # an alarm that comes as the block ends is late, not an overrun
            raise SmokeOverrun(f"its smoke test (build, compile, warm-up) ran past {seconds:g} s: stopped there")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, 5.0)
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
