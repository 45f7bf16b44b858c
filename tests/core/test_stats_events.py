import json
import math

import pytest

from sysprof.profiler_core.analysis.metrics import build_summary, summarize_ms
from sysprof.profiler_core.analysis.peaks import matmul_precision_used, peak_tflops
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.events import decode_line, encode_event


def test_summary_statistics_by_hand():
    stats = summarize_ms([10.0, 12.0, 14.0, 20.0])
    assert stats["mean_ms"] == 14.0
    assert stats["median_ms"] == 13.0
    assert math.isclose(stats["std_ms"], math.sqrt((16 + 4 + 0 + 36) / 3))
    assert (stats["min_ms"], stats["max_ms"], stats["n"]) == (10.0, 20.0, 4)
    assert math.isclose(stats["cv"], stats["std_ms"] / 14.0)


def test_single_and_empty_samples():
    assert summarize_ms([5.0])["std_ms"] == 0.0
    assert summarize_ms([])["n"] == 0 and summarize_ms([])["mean_ms"] is None


def test_event_round_trip_and_non_json_lines_skipped():
    line = encode_event("step", index=3, wall_ms=1.5)
    assert "\n" not in line
    assert decode_line(line) == {"event": "step", "index": 3, "wall_ms": 1.5}
    assert decode_line(line.encode()) == decode_line(line)
    for noise in ("Collecting data...", "", "{not json", '{"no_event": 1}', '{"event": "bogus"}', "[1, 2]",
                  "Generating '/tmp/nsys-report-1234.qdstrm'"):
        assert decode_line(noise) is None


def test_unknown_event_cannot_be_encoded():
    with pytest.raises(ValueError):
        encode_event("stpe")


def test_peak_table_and_precision_used():
    assert matmul_precision_used("fp32", "highest") == "fp32"
    assert matmul_precision_used("fp32", "high") == "tf32"
    assert matmul_precision_used("bf16", "highest") == "bf16"
    assert peak_tflops("NVIDIA H200", "bf16") == 989.0
    assert peak_tflops("NVIDIA H100 80GB HBM3", "tf32") == 495.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB", "fp32") == 19.5
    assert peak_tflops("NVIDIA GeForce RTX 3090", "bf16") is None  # unknown: N/A, never a guess


def _step(kind, index, wall, fwd, bwd, opt):
    return {"kind": kind, "index": index, "wall_ms": wall,
            "phases_ms": {"forward": fwd, "backward": bwd, "optimizer": opt},
            "peak_allocated_bytes": {"forward": 100 + index, "backward": 200}}


def test_build_summary_uses_measured_steps_only_and_derives_mfu():
    cfg = RunConfig(model="small", ctx=256, batch=4, mode="train", dtype="bf16")
    steps = [_step("warmup", 0, 500.0, 1, 1, 1)] + [_step("measured", i, 30.0, 10.0, 18.0, 2.0) for i in range(3)]
    env = {"device_type": "cuda", "device_name": "NVIDIA H200", "float32_matmul_precision": "highest"}
    summary = build_summary(cfg, env, steps, "ok", "runs/x")
    assert summary["warmup_ms"] == [500.0]
    assert summary["phases"]["step"]["median_ms"] == 30.0 and summary["phases"]["forward"]["n"] == 3
    assert summary["tokens_per_s"] == pytest.approx(4 * 256 / 0.030)
    assert summary["tflops"] == pytest.approx(summary["flops_per_step"] / 0.030 / 1e12)
    assert summary["mfu"] == pytest.approx(summary["tflops"] / 989.0)
    assert summary["peak_memory_bytes"] == {"forward": 102, "backward": 200}
    json.dumps(summary)


def test_cpu_summary_has_no_mfu():
    summary = build_summary(RunConfig(model="tiny"), {"device_type": "cpu"}, [_step("measured", 0, 9, 3, 3, 3)],
                            "ok", "r")
    assert summary["mfu"] is None and summary["peak_tflops"] is None and summary["tflops"] > 0


def test_forward_plus_backward_is_each_steps_sum_not_a_sum_of_medians():
    from sysprof.profiler_core.analysis.metrics import phase_stats

    steps = [{"wall_ms": 10.0, "phases_ms": {"forward": f, "backward": b, "optimizer": 1.0}}
             for f, b in ((1.0, 9.0), (5.0, 2.0), (3.0, 3.0))]
    stats = phase_stats(steps)
    assert list(stats) == ["forward", "backward", "forward+backward", "optimizer", "step"]
    assert stats["forward+backward"]["median_ms"] == 7.0  # sums 10, 7, 6; the medians would add to 3 + 3 = 6
    forward_only = phase_stats([{"wall_ms": 2.0, "phases_ms": {"forward": 2.0}}] * 2)
    assert list(forward_only) == ["forward", "step"]
