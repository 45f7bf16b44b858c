"""A stop held back while a step is written: the step lands in steps.jsonl and in the runner's own list together,
so a cancelled run's summary counts exactly the steps its file has (CI once saw 5 against 4)."""
import signal

import pytest

from sysprof.profiler_core.base.stop_signals import deferrable, held_stop_signals


class Stopped(Exception):
    pass


def test_a_stop_inside_the_block_is_handled_when_the_block_ends():
    seen: list[int] = []

    def stop(signum, _frame):
        seen.append(signum)
        raise Stopped

    previous = signal.signal(signal.SIGUSR2, deferrable(stop))
    try:
        written = []
        with pytest.raises(Stopped), held_stop_signals():
            written.append("file")
            signal.raise_signal(signal.SIGUSR2)  # the stop arrives between the two writes
            written.append("list")
        assert written == ["file", "list"] and seen == [signal.SIGUSR2]
        with pytest.raises(Stopped):  # outside a block it stops at once
            signal.raise_signal(signal.SIGUSR2)
        assert seen == [signal.SIGUSR2] * 2
    finally:
        signal.signal(signal.SIGUSR2, previous)
