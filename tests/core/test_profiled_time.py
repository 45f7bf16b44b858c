"""Where a profiled run's time goes: the pass clock, the breakdown, the stats job running beside the analysis, and
the line `sysprof run` prints."""
from __future__ import annotations

import time

from sysprof.profiler_core.base import events
from sysprof.profiler_core.kernels.nsys.commands import StatsJob
from sysprof.profiler_core.render.run_report import profiled_time_line
from sysprof.profiler_core.session.clock import PassClock, profiled_breakdown


def test_pass_clock_splits_a_pass_at_its_stages():
    clock = PassClock()
    for name in ("build", "warmup", "measured"):
        time.sleep(0.02)
        clock.saw({"event": events.STAGE, "name": name})
    clock.saw({"event": events.STEP})  # not a mark
    time.sleep(0.02)
    clock.saw({"event": events.FINISHED})
    seconds = clock.stop()
    assert list(seconds) == ["start", "build", "warmup", "measured", "exit", "total"]
    assert all(seconds[name] >= 0.015 for name in ("start", "build", "warmup", "measured"))
    parts = sum(value for name, value in seconds.items() if name != "total")
    assert abs(parts - seconds["total"]) < 1e-6


def test_breakdown_keeps_the_clean_pass_apart_from_the_profiled_part():
    clean = {"start": 3.0, "build": 2.0, "warmup": 1.0, "measured": 1.0, "exit": 0.5, "total": 7.5}
    profiled = {"start": 6.0, "build": 6.0, "warmup": 1.0, "measured": 4.0, "exit": 1.5, "total": 18.5}
    backend = {"export": 0.4, "stats": 0.9, "stats_wait": 0.1}
    seconds = profiled_breakdown(clean, profiled, backend, analysis_s=0.7)
    assert seconds["clean_pass"] == 7.5
    assert seconds["profiled_start"] == 6.0 and seconds["profiled_exit"] == 1.5
    assert seconds["export"] == 0.4 and seconds["analysis"] == 0.3  # the export is timed inside the analysis
    # The profiled part: its runner, the analysis (export included) and the wait for the stats left beside it.
    assert seconds["profiled_total"] == 18.5 + 0.7 + 0.1


def test_stats_run_beside_the_caller_and_report_their_failure(tmp_path):
    fake_nsys = tmp_path / "nsys"
    fake_nsys.write_text("#!/bin/sh\nsleep 0.5\necho 'ERROR: report cannot be read'\n")
    fake_nsys.chmod(0o755)
    started = time.monotonic()
    job = StatsJob(fake_nsys, tmp_path / "profile.sqlite", tmp_path)
    assert time.monotonic() - started < 0.4  # started, not waited for
    warnings = job.finish()
    assert warnings == ["nsys stats: ERROR: report cannot be read"]
    assert job.job.seconds >= 0.5
    assert "profile.sqlite" in (tmp_path / "nsys_stats.log").read_text()


def test_stats_that_cannot_start_are_a_warning_not_a_failure(tmp_path):
    job = StatsJob(tmp_path / "no-such-nsys", tmp_path / "profile.sqlite", tmp_path)
    [warning] = job.finish()
    assert warning.startswith("nsys stats: could not run no-such-nsys")


def test_run_report_prints_the_breakdown():
    seconds = profiled_breakdown({"total": 12.8}, {"start": 6.1, "build": 5.9, "total": 12.0}, {"export": 0.1}, 0.4)
    line = profiled_time_line({"profile": {"seconds": seconds}})  # type: ignore[typeddict-item]
    assert line is not None
    assert "clean pass 12.8 s" in line and "profiled part 12.4 s" in line
    assert "start 6.1" in line and "build 5.9" in line and "export 0.1" in line and "analysis 0.3" in line
    assert profiled_time_line({"profile": {"status": "ok"}}) is None  # type: ignore[typeddict-item]
    held = profiled_breakdown({"total": 12.8}, {"started_early": 13.0, "start": 0.0, "held": 0.2, "build": 1.1,
                                                "total": 6.0}, {}, 0.4)
    line = profiled_time_line({"profile": {"seconds": held}})  # type: ignore[typeddict-item]
    assert line is not None and "started 13.0 s early, held beside the clean pass" in line
    assert "early 13.0" not in line  # not a part of the profiled time: it overlapped the clean pass
