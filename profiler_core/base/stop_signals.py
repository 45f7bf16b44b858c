"""The signals that stop a run the way Ctrl-C does, installed alike by the CLI, the session and the runner.

A hang-up (SIGHUP: the terminal closed, the SSH session dropped) stops a run with its summary, and whatever was
printed to that terminal goes nowhere from then on; unless the process started with SIGHUP ignored: that is
`nohup sysprof run … &`, whose user asked for the run to outlive the terminal, and every process of the run then
keeps ignoring it (the ignore is inherited down to the runner)."""
from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

Handler = Callable[[int, FrameType | None], object]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# torchrun (the launcher of --nproc ranks) puts its own stop on SIGHUP unless told which signals to handle; the
# variable is its --signals-to-handle, which it reads from the environment.
TORCHRUN_SIGNALS_ENV = "PET_SIGNALS_TO_HANDLE"


def on_stop_signals(handler: Handler, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> None:
    for signum in signals:
        if signum != signal.SIGHUP:
            signal.signal(signum, handler)
        elif signal.getsignal(signum) == signal.SIG_IGN:  # nohup: leave it ignored
            os.environ.setdefault(TORCHRUN_SIGNALS_ENV, "SIGTERM,SIGINT,SIGQUIT")  # in torchrun and its ranks too
        else:
            signal.signal(signum, _leaving_the_terminal(handler))


_held: list[bool] = []  # one entry per held_stop_signals() block the main thread is in
_pending: list[tuple[Handler, int, FrameType | None]] = []


def deferrable(handler: Handler) -> Handler:
    """The handler, held back while held_stop_signals() is in force (then run as the block ends)."""
    def deferred(signum: int, frame: FrameType | None) -> object:
        if _held:
            _pending.append((handler, signum, frame))
            return None
        return handler(signum, frame)
    return deferred


@contextmanager
def held_stop_signals() -> Iterator[None]:
    """A stop that arrives inside the block is handled when the block ends: what it writes happens whole (a step
    in steps.jsonl and in the run's own list, never in one only). Needs the handler installed with deferrable()."""
    _held.append(True)
    try:
        yield
    finally:
        _held.pop()
        if not _held and _pending:
            handler, signum, frame = _pending[0]
            _pending.clear()
            handler(signum, frame)


def _leaving_the_terminal(handler: Handler) -> Handler:
    """The hang-up's handler: output that went to the terminal goes to /dev/null from then on (a write to a hung-up
    terminal fails with EIO, and the report would end in a traceback); output to a file or a pipe is kept."""
    on_terminal = [fd for fd in (1, 2) if os.isatty(fd)]

    def on_hang_up(signum: int, frame: FrameType | None) -> object:
        nowhere = os.open(os.devnull, os.O_WRONLY)
        for fd in on_terminal:
            os.dup2(nowhere, fd)
        os.close(nowhere)
        return handler(signum, frame)

    return on_hang_up


def dump_stacks_on_request() -> None:
    """`kill -USR1 PID` prints every thread's Python stack to stderr (the runner's: its run directory's stderr.log)
    and the process goes on: what a run that will not stop is doing, without a debugger."""
    if hasattr(signal, "SIGUSR1"):  # to descriptor 2 itself: sys.stderr may be replaced (a test's capture)
        faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
