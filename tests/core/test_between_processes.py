"""Statistics across the processes of one config (metrics): the spread between per-process medians, a group
summary built from per-process summaries, and reading per-process values back out of either kind of summary."""
import json
import math
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.metrics import (
    aggregate_processes,
    between_process_stats,
    build_summary,
    process_medians,
    process_throughputs,
)
from sysprof.profiler_core.base.config import RunConfig

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
# Step medians of one config run in six fresh processes on a shared 2×H200 host.
SHARED_HOST_MEDIANS = [36.2, 39.2, 50.4, 38.3, 36.6, 40.3]


def test_between_stats_of_six_processes_on_a_shared_host():
    stats = between_process_stats(SHARED_HOST_MEDIANS)
    assert stats["n"] == 6 and stats["values"] == SHARED_HOST_MEDIANS  # run order kept
    assert (stats["median"], stats["min"], stats["max"]) == (38.75, 36.2, 50.4)
    # Quartiles by linear interpolation (numpy's default): sorted 36.2 36.6 38.3 39.2 40.3 50.4.
    assert stats["q1"] == pytest.approx(36.6 + 0.25 * 1.7) and stats["q3"] == pytest.approx(39.2 + 0.75 * 1.1)
    assert stats["iqr"] == pytest.approx(3.0)
    assert stats["robust_cv_pct"] == pytest.approx(0.7413 * 3.0 / 38.75 * 100)  # 5.74%: the outlier barely moves it
    mean = sum(SHARED_HOST_MEDIANS) / 6
    std = math.sqrt(sum((v - mean) ** 2 for v in SHARED_HOST_MEDIANS) / 5)
    assert stats["cv_pct"] == pytest.approx(std / mean * 100) and stats["cv_pct"] > 13  # 50.4 inflates the plain CV


def test_between_stats_of_two_one_and_no_processes():
    two = between_process_stats([10.0, 12.0])
    assert (two["median"], two["q1"], two["q3"], two["iqr"]) == (11.0, 10.5, 11.5, 1.0)
    assert two["cv_pct"] == pytest.approx(math.sqrt(2) / 11 * 100)
    assert two["robust_cv_pct"] == pytest.approx(0.7413 / 11 * 100)
    one = between_process_stats([5.0])
    assert (one["n"], one["median"], one["min"], one["max"]) == (1, 5.0, 5.0, 5.0)
    assert [one[k] for k in ("q1", "q3", "iqr", "cv_pct", "robust_cv_pct")] == [None] * 5  # unknown, not 0
    none = between_process_stats([])
    assert none["n"] == 0 and none["values"] == [] and all(v is None for k, v in none.items()
                                                           if k not in ("n", "values"))


def process_summary(step_ms: float, status: str = "ok", jitter=(0.98, 1.0, 1.02, 1.0, 1.01)):
    """Test input: one process's summary, by metrics.build_summary, from made-up measured steps around step_ms."""
    steps = [{"kind": "measured", "index": i, "wall_ms": step_ms * f,
              "phases_ms": {"forward": step_ms * f * 0.3, "backward": step_ms * f * 0.6,
                            "optimizer": step_ms * f * 0.1}}
             for i, f in enumerate(jitter)]
    return build_summary(RunConfig(model="tiny", ctx=32, batch=2, device="cpu"), {"device_type": "cpu"}, steps, status,
                         "test-process")


def test_group_summary_takes_medians_over_the_processes_that_finished():
    processes = [process_summary(ms) for ms in SHARED_HOST_MEDIANS] + [process_summary(99.0, status="oom")]
    group = aggregate_processes(processes, requested=8)
    assert group["repeats"]["n"] == 8 and group["repeats"]["ok"] == 6 and group["repeats"]["failed"] == 1
    assert [p["status"] for p in group["repeats"]["processes"]] == ["ok"] * 6 + ["oom"]
    step = group["phases"]["step"]
    assert step["median_ms"] == pytest.approx(38.75)  # the median of the per-process medians; the oom one is out
    assert (step["min_ms"], step["max_ms"]) == pytest.approx((36.2, 50.4))
    assert step["n"] == 30  # measured steps of the six processes
    stds = sorted(p["phases"]["step"]["std_ms"] for p in processes[:6])
    assert step["std_ms"] == pytest.approx((stds[2] + stds[3]) / 2)  # median within-run std
    assert group["between"]["step"]["values"] == pytest.approx(SHARED_HOST_MEDIANS)
    assert group["between"]["step"]["robust_cv_pct"] == pytest.approx(5.739, abs=1e-3)
    rates = [p["tokens_per_s"] for p in processes[:6]]
    assert group["between"]["tokens_per_s"]["values"] == pytest.approx(rates)
    assert group["tokens_per_s"] == pytest.approx(sorted(rates)[2] / 2 + sorted(rates)[3] / 2)
    assert set(group["phases"]) == {"forward", "backward", "forward+backward", "optimizer", "step"}
    json.dumps(group)


def test_process_values_from_group_and_single_summaries():
    processes = [process_summary(ms) for ms in (30.0, 31.0)] + [process_summary(5.0, status="failed")]
    group = {**processes[0], **aggregate_processes(processes)}
    assert process_medians(group, "step") == pytest.approx([30.0, 31.0])  # run order, ok processes only
    assert process_throughputs(group) == pytest.approx([p["tokens_per_s"] for p in processes[:2]])
    single = json.loads((RUNS / "tiny-ctx32" / "summary.json").read_text())
    assert process_medians(single, "forward") == [single["phases"]["forward"]["median_ms"]]
    assert process_throughputs(single) == [single["tokens_per_s"]]
    assert process_medians(single, "no such phase") == [] and process_throughputs({}) == []


def test_group_of_real_summaries_keeps_every_reader_working():
    summaries = [json.loads((RUNS / name / "summary.json").read_text()) for name in ("tiny-ctx32", "tiny-ctx64")]
    group = aggregate_processes(summaries)
    for phase, stats in group["phases"].items():
        assert set(stats) == set(summaries[0]["phases"][phase])  # PhaseStats' keys, nothing renamed
        assert stats["median_ms"] == pytest.approx(sum(s["phases"][phase]["median_ms"] for s in summaries) / 2)
