"""`sysprof trace --profile-steps FIRST-LAST`: the steps handed to nsys's cudaProfilerApi capture range, what the run
says it captured (all, part when the job ended first, none when it ended before or ran on the CPU), and the
options refused before anything starts. The capture itself, under a real nsys, is test_trace_profile_gpu.py's."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path
from types import SimpleNamespace

import pytest

from sysprof.profiler_core.cli.main import main as cli
from sysprof.trace.profile_window import ProfileWindow, parse_steps


def test_steps_are_read_as_an_inclusive_range_or_one_step():
    assert parse_steps("200-220") == (200, 220) and parse_steps("7") == (7, 7) and parse_steps(" 0-0 ") == (0, 0)
    for bad in ("5-2", "-3", "a-b", "1-2-3", ""):
        with pytest.raises(ValueError):
            parse_steps(bad)


class CudaCalls:
    """torch's surface the window calls, recording the order of the calls (the capture itself needs a GPU)."""

    def __init__(self):
        self.calls: list[str] = []
        runtime = SimpleNamespace(cudaProfilerStart=lambda: self.calls.append("start"),
                                  cudaProfilerStop=lambda: self.calls.append("stop"))
        self.cuda = SimpleNamespace(synchronize=lambda: self.calls.append("sync"), cudart=lambda: runtime)


def stepped(window: ProfileWindow, steps: int, cuda: bool = True) -> dict:
    for index in range(steps):
        window.step_starts(index, cuda)
        window.step_ends(index)
    return window.close(steps)


def test_the_capture_starts_as_the_first_chosen_step_starts_and_stops_as_the_last_ends_after_waiting_for_the_gpu():
    torch = CudaCalls()
    window = ProfileWindow(torch, 3, 5)
    for index in range(3):
        window.step_starts(index, True)
        window.step_ends(index)
    assert torch.calls == []
    window.step_starts(3, True)
    assert torch.calls == ["sync", "start"]
    for index in (3, 4):
        window.step_ends(index)
        window.step_starts(index + 1, True)
    assert torch.calls == ["sync", "start"]
    window.step_ends(5)
    assert torch.calls == ["sync", "start", "sync", "stop"]
    assert window.close(9)["text"] == "steps 3-5 profiled" and window.captured() == [3, 5]
    assert torch.calls[-1] == "stop" and len(torch.calls) == 4  # closing a stopped capture stops nothing


def test_the_run_says_which_steps_were_captured_when_the_job_ends_early_or_runs_on_the_cpu():
    torch = CudaCalls()
    cut = ProfileWindow(torch, 3, 10)
    assert stepped(cut, 6)["text"] == "steps 3-5 profiled of the steps 3-10 asked: the job ended first"
    assert torch.calls == ["sync", "start", "sync", "stop"] and cut.captured() == [3, 5]
    never = ProfileWindow(CudaCalls(), 200, 220)
    assert stepped(never, 150)["text"] == "steps 200-220 not profiled: the job ended after 150 steps"
    assert never.captured() is None
    on_cpu = ProfileWindow(CudaCalls(), 1, 1)
    assert stepped(on_cpu, 4, cuda=False)["text"] == "step 1 not profiled: the loop ran on the CPU, and nsys " \
                                                     "captures CUDA work"
    assert on_cpu.torch.calls == [] and on_cpu.captured() is None


@pytest.mark.parametrize("options, said", [
    (["--profile-steps", "9-3"], "--profile-steps '9-3': expected 0 <= FIRST <= LAST"),
    (["--profile-steps", "2-4", "--nsys", "no/such/nsys"], "no/such/nsys"),
])
def test_a_bad_window_or_a_missing_nsys_is_one_line_before_anything_starts(tmp_path, options, said):
    err = io.StringIO()
    with redirect_stderr(err):
        code = cli(["trace", "--runs-dir", str(tmp_path / "runs"), *options, "--", "python", __file__])
    assert code == 2 and said in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_window_that_captured_nothing_leaves_the_run_whole_and_says_why_there_are_no_kernel_tables(tmp_path):
    from sysprof.profiler_core.session.backends.nsys_backend import NsysBackend
    from sysprof.profiler_core.session.watch import MeasuredWatch
    from sysprof.trace.settle import settle_job
    from sysprof.trace.starting import new_tracker

    tracker = new_tracker("cpu-loop", tmp_path, None, 1, "cpu", 10)
    tracker.window = ProfileWindow(CudaCalls(), 2, 3)
    for _ in range(5):
        with tracker.step(), tracker.phase("forward"):
            pass
    tracker.finish()
    said = settle_job(tracker.run_dir, 1, NsysBackend(Path("no-nsys-here")), MeasuredWatch("cpu"))
    reason = "steps 2-3 not profiled: the loop ran on the CPU, and nsys captures CUDA work"
    assert said == [f"kernel tables unavailable: {reason}"]
    summary = json.loads((tracker.run_dir / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["profiled_steps"] is None and summary["profile"]["error"] == reason
    assert summary["phases"]["step"]["n"] == 4
