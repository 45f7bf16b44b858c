"""How a failed run ends: a stop, an OOM, a lost reader or a crash of the workload, each read as what it is (through
whatever wrapped it), then reported as the run's summary and its last event.

Every way out of a failed run goes through guarded() and fail(), both for a runner process of its own (engine.py)
and for each arm of a shared one (arms.py): the verdicts live here, the steps that raise them in engine.py.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from sysprof.profiler_core.base import disk_space, events, rundir
from sysprof.profiler_core.base.config import ConfigError
from sysprof.profiler_core.base.events import ReaderGone, emit
from sysprof.profiler_core.base.records import RunError
from sysprof.profiler_core.base.stop_signals import STOP_SIGNALS
from sysprof.profiler_core.runner.hold import NotNeeded

if TYPE_CHECKING:  # the runner's steps raise the failures read here: only its type is needed
    from sysprof.profiler_core.runner.engine import Runner

CANCELLED_CODE = 130


class Cancelled(Exception):
    """SIGINT or SIGTERM arrived: stop, keep what finished, report it."""


class StepFailure(Exception):
    def __init__(self, kind: str, message: str, phase: str | None, peak_bytes: int | None):
        super().__init__(message)
        self.kind, self.phase, self.peak_bytes = kind, phase, peak_bytes


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def raise_cancelled(signum: int, _frame: object) -> None:
    # One stop is enough: a second one (the terminal's Ctrl-C and the launcher's own SIGINT) arriving while
    # the summary is written would cut it short.
    ignore_stop_signals()
    raise Cancelled(signal.Signals(signum).name)


def _current_phase(runner: Runner) -> str | None:
    """The phase a failure happened in; None between two steps (the last step's phase had ended)."""
    if not runner.tools:
        return "build"
    return runner.tools.current_phase or (None if runner.steps else "start")


def _classify(exc: BaseException) -> tuple[str, str]:
    inner = getattr(exc, "inner_exception", None)
    if isinstance(inner, BaseException):  # torch.compile's wrapper: its own first line names only the backend
        kind, message = _classify(inner)
        return kind, f"{message} (inside torch.compile: {type(exc).__name__})"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "CUDA" in text or "cuda" in type(exc).__module__:
        return "cuda", text
    return "error", f"{type(exc).__name__}: {text}"


def _unwrapped(exc: BaseException) -> BaseException:
    """The stop, the OOM or the lost reader that another library wrapped: torch.compile re-raises whatever
    interrupts a compile as BackendCompilerFailed (a SIGTERM during a compile read as a failed run). Only a wrapper's
    own link is followed (its inner_exception, or `raise … from`): an error raised while handling another (its
    __context__, e.g. a model's own fallback after an OOM) is an error of its own, and the tool's verdicts stand."""
    seen: set[int] = set()
    inner: BaseException | None = exc
    while inner is not None and id(inner) not in seen:
        if isinstance(inner, (StepFailure, ConfigError, NotNeeded)):
            return exc
        if isinstance(inner, (Cancelled, KeyboardInterrupt, ReaderGone, torch.OutOfMemoryError)):
            return inner
        seen.add(id(inner))
        inner = getattr(inner, "inner_exception", None) or inner.__cause__
    return exc


def unwrapping(work: Callable[[], None]) -> None:
    """work(), with the stop, the OOM or the lost reader another library wrapped raised as itself."""
    try:
        work()
    except Exception as exc:
        inner = _unwrapped(exc)
        if inner is exc:
            raise
        raise inner from None  # the wrapper only carried it (and keeps it: no cause cycle between the two)


def guarded(runner: Runner, work: Callable[[], None]) -> int | None:
    """Run the runner's work; None when it finished, else the exit code once the failure is reported (its summary
    written and its last event sent): every way out of a failed run goes through here."""
    try:
        unwrapping(work)
    except NotNeeded:  # held and never released: nothing was written, nothing to report
        return 0
    except ConfigError as exc:
        return fail(runner, events.CONFIG, str(exc), None, None, code=2)
    except StepFailure as exc:
        return fail(runner, exc.kind, str(exc), exc.phase, exc.peak_bytes)
    except (Cancelled, KeyboardInterrupt) as exc:
        return fail(runner, events.CANCELLED, f"stopped by {exc or 'SIGINT'}", None, None, code=CANCELLED_CODE)
    except ReaderGone:  # the session or `sysprof run` that started it is gone: not an error in the last phase run
        return fail(runner, events.DIED, "the process reading its events went away (the session or `sysprof run` "
                                          f"that started it ended): {_stopped_after(runner)}", None, None)
    except torch.OutOfMemoryError as exc:  # outside a step: building the model or compiling it
        peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
        return fail(runner, events.OOM, str(exc).splitlines()[0], _current_phase(runner), peak)
    except Exception as exc:  # a crash of the workload is a result to report, not a crash of the tool
        if disk_space.is_disk_full(exc):  # our own writes: stderr.log is on the same full disk
            return fail(runner, events.DISK_FULL, _disk_full_message(exc, runner), None, None)
        traceback.print_exc(file=sys.stderr)
        kind, message = _classify(exc)
        return fail(runner, kind, message, _current_phase(runner), None)
    return None


def _disk_full_message(exc: BaseException, runner: Runner) -> str:
    where = getattr(exc, "filename", None) or runner.run_dir
    return f"no space left on the device ({where}): {_stopped_after(runner)}"


def _stopped_after(runner: Runner) -> str:
    done = sum(1 for step in runner.steps if step["kind"] == "measured")
    return f"stopped after {done} of {runner.cfg.steps} measured steps; the steps written before are kept"


def fail(runner: Runner, kind: str, message: str, phase: str | None, peak: int | None, code: int = 1) -> int:
    error: RunError = {"kind": kind, "message": message, "phase": phase, "peak_allocated_bytes": peak}
    status = events.OOM if kind == events.OOM else events.FAILED_STATUS  # a cancel is a failed run of kind "cancelled"
    summary = runner.finish(status, error)
    with contextlib.suppress(ReaderGone):  # the summary is written: a launcher that is gone is told nothing more
        emit(events.FAILED, **error, summary_path=str(runner.run_dir / rundir.SUMMARY), summary=summary)
    return code
