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
from sysprof.trace.step_windows import MemoryCapture, NsysCapture, StepWindow, parse_steps


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


def stepped(window: StepWindow, steps: int, cuda: bool = True) -> dict:
    for index in range(steps):
        window.step_starts(index, cuda)
        window.step_ends(index)
    return window.close(steps)


def test_the_capture_starts_as_the_first_chosen_step_starts_and_stops_as_the_last_ends_after_waiting_for_the_gpu():
    torch = CudaCalls()
    window = StepWindow(NsysCapture(torch), 3, 5)
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
    cut = StepWindow(NsysCapture(torch), 3, 10)
    assert stepped(cut, 6)["text"] == "steps 3-5 profiled of the steps 3-10 asked: the job ended first"
    assert torch.calls == ["sync", "start", "sync", "stop"] and cut.captured() == [3, 5]
    never = StepWindow(NsysCapture(CudaCalls()), 200, 220)
    assert stepped(never, 150)["text"] == "steps 200-220 not profiled: the job ended after 150 steps"
    assert never.captured() is None
    on_cpu = StepWindow(NsysCapture(CudaCalls()), 1, 1)
    assert stepped(on_cpu, 4, cuda=False)["text"] == "step 1 not profiled: the loop ran on the CPU, and nsys " \
                                                     "captures CUDA work"
    assert on_cpu.capture.torch.calls == [] and on_cpu.captured() is None


@pytest.mark.parametrize("options, said", [
    (["--profile-steps", "9-3"], "--profile-steps '9-3': expected 0 <= FIRST <= LAST"),
    (["--profile-steps", "2-4", "--nsys", "no/such/nsys"], "no/such/nsys"),
    (["--memory-steps", "x"], "--memory-steps 'x': expected FIRST-LAST step numbers"),
    (["--profile-steps", "2-4", "--memory-steps", "4-5"], "overlap: recording memory slows the steps nsys profiles"),
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
    tracker.windows = [StepWindow(NsysCapture(CudaCalls()), 2, 3)]
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


class AllocatorCalls:
    """torch's allocator-history surface the memory window calls, in order; the dump writes what it is given."""

    def __init__(self, dump_fails: bool = False):
        self.calls: list[str] = []

        def record(enabled="all", **options):
            self.calls.append("record" if enabled else "stop recording")

        def dump(path):
            self.calls.append("dump")
            if dump_fails:
                raise OSError(28, "No space left on device")
            Path(path).write_bytes(b"snapshot")
        self.cuda = SimpleNamespace(memory=SimpleNamespace(_record_memory_history=record, _dump_snapshot=dump))


def test_the_allocator_history_spans_the_chosen_steps_and_is_dumped_where_a_runs_memory_pass_writes_it(tmp_path):
    torch = AllocatorCalls()
    window = StepWindow(MemoryCapture(torch, tmp_path), 3, 4)
    recording = []
    for index in range(7):
        window.step_starts(index, True)
        recording.append(window.recording())
        window.step_ends(index)
    assert recording == [False, False, False, True, True, False, False]
    assert torch.calls == ["record", "dump", "stop recording"]
    assert (tmp_path / "memory" / "memory_snapshot.pickle").read_bytes() == b"snapshot"
    assert window.close(7)["text"] == "steps 3-4 memory-recorded" and window.captured() == [3, 4]


def test_a_snapshot_that_cannot_be_written_ends_the_recording_and_the_loop_goes_on(tmp_path):
    torch = AllocatorCalls(dump_fails=True)
    window = StepWindow(MemoryCapture(torch, tmp_path), 1, 1)
    stepped(window, 3)
    assert torch.calls == ["record", "dump", "stop recording"] and window.captured() is None
    assert window.close(3)["text"] == "step 1 not memory-recorded: OSError: [Errno 28] No space left on device"


def test_memory_steps_on_a_cpu_loop_are_a_reason_in_the_run_and_the_statistics_keep_every_step(tmp_path):
    from sysprof.profiler_core.session.watch import MeasuredWatch
    from sysprof.trace.settle import settle_job
    from sysprof.trace.starting import new_tracker

    tracker = new_tracker("cpu-loop", tmp_path, None, 1, "cpu", 10)
    tracker.windows = [StepWindow(MemoryCapture(AllocatorCalls(), tracker.run_dir), 2, 3)]
    for _ in range(5):
        with tracker.step(), tracker.phase("forward"):
            pass
    tracker.finish()
    said = settle_job(tracker.run_dir, 1, None, MeasuredWatch("cpu"))
    reason = "steps 2-3 not memory-recorded: the loop ran on the CPU, and the allocator history is CUDA's"
    assert said == [f"memory analysis unavailable: {reason}"]
    summary = json.loads((tracker.run_dir / "summary.json").read_text())
    assert summary["memory_steps"] is None and summary["memory"]["error"] == reason
    assert summary["phases"]["step"]["n"] == 4 and "profile" not in summary


def test_steps_a_capture_slowed_are_kept_but_left_out_of_the_loops_statistics():
    from sysprof.trace.summary import loop_summary

    steps = [{"kind": "warmup", "index": 0, "wall_ms": 50.0, "phases_ms": {"forward": 40.0}}]
    steps += [{"kind": "measured", "index": i, "wall_ms": 10.0, "phases_ms": {"forward": 8.0}} for i in range(1, 12)]
    steps += [{"kind": "measured", "index": i, "wall_ms": 14.0, "phases_ms": {"forward": 11.0}, "pass": "memory"}
              for i in (12, 13)]
    summary = loop_summary({}, {}, steps, "run", None)
    assert summary["phases"]["step"]["n"] == 11 and summary["phases"]["step"]["max_ms"] == 10.0


def test_a_step_that_raises_inside_the_window_is_held_by_it_and_a_failed_write_ends_the_recording(tmp_path):
    from sysprof.trace.starting import new_tracker

    window = StepWindow(MemoryCapture(AllocatorCalls(), tmp_path), 5, 7)
    stepped(window, 5)
    window.step_starts(5, True)  # step 5 raises: 5 steps done, step 5 begun
    assert window.close(5, 5)["text"] == "step 5 memory-recorded of the steps 5-7 asked: the job ended first"
    assert window.captured() == [5, 5]

    tracker = new_tracker("cpu-loop", tmp_path / "runs", None, 0, "cpu", 10)
    torch = AllocatorCalls()
    tracker.windows = [StepWindow(MemoryCapture(torch, tracker.run_dir), 1, 8)]
    tracker.windows[0].step_starts(1, True)  # as a CUDA loop's first chosen step starts it

    def full_disk(record):
        raise OSError(28, "No space left on device")
    tracker.run.write_step = full_disk
    with tracker.step(), tracker.phase("forward"):
        pass
    assert torch.calls == ["record", "dump", "stop recording"]  # no step ends any more: the recording is ended


def test_the_loops_own_phase_ranges_give_way_to_torchs_optimizer_range_between_them_and_unknown_names_are_left():
    from sysprof.profiler_core.memory.phases import RangeLookup, annotated_ranges

    def notes(*ranges):
        return [{"name": name, "stage": stage, "time_us": t} for name, start, end in ranges
                for stage, t in (("START", start), ("END", end))]
    ranges = (("sysprof.phase:data", 10, 20), ("Optimizer.zero_grad#AdamW", 22, 24), ("sysprof.phase:forward", 30, 40),
              ("sysprof.phase:fwd_custom", 50, 60))
    lookup = RangeLookup(annotated_ranges(notes(*ranges)))
    assert [lookup.phase(t) for t in (5, 15, 21, 23, 25, 35, 45, 55)] == [
        None, "data", "data", "optimizer", "data", "forward", "forward", "forward"]
