"""The tracker's states in one process, on the host's clock (no atexit or excepthook: those are start()'s): a
finished tracker times nothing more and says nothing more; a run directory that cannot be written stops the tracing
with one line and the loop goes on."""
from __future__ import annotations

import json

from sysprof.trace.starting import new_tracker


def tracker_in(tmp_path):
    return new_tracker("states", tmp_path, tokens_per_step=8, warmup=1, device="cpu", memory_every=10)


def loop(tracker, steps: int) -> None:
    for _ in range(steps):
        with tracker.step() as step:
            with tracker.phase("work"):
                sum(range(1000))
            step.record(loss=0.5)


def test_a_finished_tracker_times_nothing_more_and_says_nothing(tmp_path, capsys):
    tracker = tracker_in(tmp_path)
    loop(tracker, 3)
    summary = tracker.finish()
    assert summary is not None and summary["status"] == "ok" and summary["phases"]["work"]["n"] == 2
    loop(tracker, 2)  # after the end: untimed, silent
    assert tracker.finish() is None and capsys.readouterr().err == ""
    lines = (tracker.run_dir / "steps.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["warmup", "measured", "measured"]


def test_a_run_directory_that_goes_away_stops_the_tracing_and_the_loop_goes_on(tmp_path, capsys):
    tracker = tracker_in(tmp_path)
    loop(tracker, 1)
    for path in tracker.run_dir.iterdir():
        path.unlink()
    tracker.run_dir.rmdir()
    loop(tracker, 3)
    assert tracker.finish() is None
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("sysprof trace:")]
    assert len(said) == 1 and "tracing stopped, your job goes on" in said[0]
