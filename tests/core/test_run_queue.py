"""The run-queue clock reads the kernel's own count of how long this thread waited for a CPU: it grows when other
busy processes share the thread's core, and stays near zero when the thread has a core to itself."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sysprof.profiler_core.runner.run_queue import SCHEDSTAT, RunQueueClock

BUSY = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.skipif(not os.path.exists(SCHEDSTAT) or not hasattr(os, "sched_setaffinity"),
                    reason="no schedstat or CPU affinity on this kernel")
def test_a_thread_sharing_its_core_with_busy_processes_waits_for_it():
    core = min(os.sched_getaffinity(0))
    before_affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    clock = RunQueueClock()
    try:
        start = clock.waited_ms()
        spin(0.3)
        alone = clock.waited_ms() - start
        busy = [subprocess.Popen([sys.executable, "-c", BUSY, str(core)]) for _ in range(2)]
        try:
            time.sleep(0.5)  # the busy processes start (the interpreter's import time)
            start = clock.waited_ms()
            spin(0.6)
            shared = clock.waited_ms() - start
        finally:
            for process in busy:
                process.kill()
                process.wait()
    finally:
        clock.close()
        os.sched_setaffinity(0, before_affinity)
    # Two busy processes pinned to this thread's core: it runs at most a third of the 600 ms it spins, so it waits
    # 400 ms or more; other load on the machine only adds to that. Alone, it waits only for that other load.
    assert shared > 300 and alone >= 0


def test_no_schedstat_reads_none(monkeypatch):
    import sysprof.profiler_core.runner.run_queue as run_queue

    monkeypatch.setattr(run_queue, "SCHEDSTAT", "/proc/no-such-file")
    assert run_queue.RunQueueClock().waited_ms() is None
