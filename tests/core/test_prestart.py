"""The profiled pass's runner started early and held (runner/hold.py, session/prestart.py): real runner processes on
the CPU with the tiny preset. A held runner runs nothing until released; released, it is an ordinary pass; never
released, it leaves nothing behind."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session import prestart
from sysprof.profiler_core.session.passes import Session
from sysprof.profiler_core.session.prestart import HeldPass, can_prestart

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=1, steps=3, device="cpu")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children that were waited for (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, timeout: float = 90.0) -> None:
    """Until a half second passes with no CPU used: the start-up (Python, torch) is over."""
    deadline = time.monotonic() + timeout
    while True:
        before = cpu_seconds(pid)
        time.sleep(0.5)
        if cpu_seconds(pid) - before < 0.02:
            return
        assert time.monotonic() < deadline, "the held runner never went idle"


@pytest.fixture
def held(tmp_path):
    held = HeldPass(TINY, tmp_path / "profiled", "none", [])
    yield held
    held.discard()


def test_a_held_runner_waits_idle_then_runs_as_an_ordinary_pass(tmp_path, held):
    process = held.process
    assert process is not None
    wait_until_idle(process.proc.pid)
    before, waited_from = cpu_seconds(process.proc.pid), time.monotonic()
    time.sleep(2.0)
    assert cpu_seconds(process.proc.pid) - before < 0.05, "a held runner must not run while the clean pass measures"
    assert process.proc.poll() is None and not (held.pass_dir / rundir.STEPS).exists()

    seen: list[dict] = []
    session = Session(TINY, tmp_path, seen.append)
    summary = session.run_pass("profiled", held.pass_dir, "none", held=held)
    assert summary["status"] == events.OK and summary["phases"]["step"]["n"] == TINY.steps
    assert [e["name"] for e in seen if e["event"] == events.STAGE][:2] == ["held", "build"]
    seconds = session.pass_seconds["profiled"]
    assert seconds["started_early"] >= time.monotonic() - waited_from - seconds["total"]
    assert seconds["start"] < 0.5  # released when ready: its start-up was spent while held
    assert held.process is None  # taken: the fixture's discard leaves the finished pass alone
    held.discard()
    assert (held.pass_dir / rundir.SUMMARY).is_file()


def test_a_runner_never_released_exits_and_leaves_nothing(held):
    process = held.process
    assert process is not None
    held.discard()
    assert process.proc.returncode == 0
    assert not held.pass_dir.exists()
    held.discard()  # again (the session's cleanup after a pass that discarded it): nothing to do
    assert not held.pass_dir.exists()


def test_prestart_needs_one_gpu_with_room_for_a_second_context(monkeypatch):
    assert not can_prestart(TINY)  # the CPU: nothing to overlap
    gpu = RunConfig(model="small", device="cuda")
    monkeypatch.setattr(prestart, "visible_gpu_count", lambda: 1)
    monkeypatch.setattr(prestart, "device_memory", lambda device: (80 * 1024**3, "GPU 0's memory"))
    assert can_prestart(gpu)
    assert not can_prestart(RunConfig(model="small", device="cuda", nproc=2))  # torchrun starts the ranks
    assert not can_prestart(RunConfig(model="2.7B", ctx=1024, device="cuda"))  # no room beside its peak
    monkeypatch.setattr(prestart, "device_memory", lambda device: None)
    assert not can_prestart(gpu)
