"""The signals that stop a run the way Ctrl-C does, installed alike by the CLI, the session and the runner.

A hang-up (SIGHUP: the terminal closed, the SSH session dropped) stops a run with its summary, unless the process
started with SIGHUP ignored: that is `nohup sysprof run … &`, whose user asked for the run to outlive the terminal,
and every process of the run then keeps ignoring it (the ignore is inherited down to the runner)."""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from types import FrameType

Handler = Callable[[int, FrameType | None], object]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# torchrun (the launcher of --nproc ranks) puts its own stop on SIGHUP unless told which signals to handle; the
# variable is its --signals-to-handle, which it reads from the environment.
TORCHRUN_SIGNALS_ENV = "PET_SIGNALS_TO_HANDLE"


def on_stop_signals(handler: Handler | int, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> None:
    for signum in signals:
        if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:  # nohup: leave it ignored
            os.environ.setdefault(TORCHRUN_SIGNALS_ENV, "SIGTERM,SIGINT,SIGQUIT")  # in torchrun and its ranks too
            continue
        signal.signal(signum, handler)
