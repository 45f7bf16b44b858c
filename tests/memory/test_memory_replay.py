"""Trace replay, peak, phases and the downsampled timeline, checked against an independent replay."""
from __future__ import annotations

import numpy as np

from sysprof.profiler_core.memory import downsample_timeline, replay_trace

MIB = 1024 * 1024


def straightforward_peak(snapshot: dict, free_action: str = "free_completed") -> tuple[int, int, int]:
    """(baseline, peak, event index of peak) by the plainest loop: live tensors' requested bytes."""
    trace = snapshot["device_traces"][0]
    allocated_in_trace: dict[int, int] = {}
    for event in trace:
        if event["action"] == "alloc":
            allocated_in_trace[event["addr"]] = event["size"]
        elif event["action"] == free_action:
            assert event["addr"] in allocated_in_trace, "fixture has no free without a recorded alloc"
            del allocated_in_trace[event["addr"]]
    baseline = sum(block["requested_size"] for segment in snapshot["segments"] for block in segment["blocks"]
                   if block["state"] == "active_allocated" and block["address"] not in allocated_in_trace)
    level, peak, peak_index = baseline, baseline, -1
    for index, event in enumerate(trace):
        level += {"alloc": event["size"], free_action: -event["size"]}.get(event["action"], 0)
        if level > peak:
            peak, peak_index = level, index
    return baseline, peak, peak_index


def test_peak_equals_independent_replay(snapshot, analysis):
    baseline, peak, peak_index = straightforward_peak(snapshot)
    assert analysis["baseline_bytes"] == baseline
    assert analysis["peak_allocated_bytes"] == peak
    assert analysis["peak"]["event_index"] == peak_index


def test_free_requested_and_free_completed_give_the_same_peak_here(snapshot):
    # Documented choice (free_completed) makes no difference on this fixture: every request completes at once.
    assert straightforward_peak(snapshot, "free_requested")[1] == straightforward_peak(snapshot)[1]


def test_baseline_is_parameters_adamw_state_and_two_workspaces(analysis):
    # 3 x 128,625,408 fp32 params (weights, exp_avg, exp_avg_sq) + 2 x 32 MiB cuBLAS workspace + 2 x 8 KiB.
    assert analysis["baseline_bytes"] == 3 * 128_625_408 * 4 + 2 * 32 * MIB + 2 * 8192


def test_peak_is_in_first_backward_and_numbers_are_stable(analysis):
    assert analysis["peak_allocated_bytes"] == 2_877_871_112
    assert analysis["peak"]["phase"] == "backward" and analysis["peak"]["step"] == 0
    assert analysis["peak_allocated_rounded_bytes"] >= analysis["peak_allocated_bytes"]
    assert analysis["peak_reserved_bytes"] == 3_112_173_568  # no segment events: the dump's total


def test_phases_follow_forward_backward_optimizer_twice(analysis):
    marks = analysis["timeline"]["phase_marks"]
    assert [(m["phase"], m["step"]) for m in marks] == [
        ("forward", 0), ("backward", 0), ("optimizer", 0), ("forward", 1), ("backward", 1), ("optimizer", 1)]
    times = [m["t_ms"] for m in marks]
    assert times == sorted(times) and times[0] == 0.0


def test_optimizer_phase_covers_the_optimizer_annotations(snapshot):
    replay = replay_trace(snapshot)
    trace = snapshot["device_traces"][0]
    steps = [n for n in snapshot["external_annotations"] if n["name"].startswith("Optimizer.step")]
    start, end = steps[0]["time_us"], steps[1]["time_us"]
    inside = [i for i, e in enumerate(trace) if start <= e["time_us"] <= end]
    assert inside and all(replay.phases[i] == "optimizer" for i in inside)


def test_timeline_is_short_and_keeps_the_peak(analysis):
    timeline = analysis["timeline"]
    assert len(timeline["t"]) == len(timeline["active_bytes"]) <= 2000
    assert max(timeline["active_bytes"]) == analysis["peak_allocated_bytes"]
    assert min(timeline["active_bytes"]) >= analysis["baseline_bytes"]
    assert timeline["t"] == sorted(timeline["t"]) and timeline["t_unit"] == "ms"


def test_downsampling_keeps_a_single_spike_and_carries_flat_levels():
    times = list(range(0, 1_000_000, 100))  # 10,000 events, 100 us apart
    levels = np.full(len(times), 10, dtype=np.int64)
    levels[4321] = 999
    result = downsample_timeline(times, levels, start_level=10, max_points=50)
    assert len(result["active_bytes"]) == 50
    assert max(result["active_bytes"]) == 999 and result["active_bytes"].count(999) == 1
    assert min(result["active_bytes"]) == 10


def test_downsampling_fills_empty_buckets_with_the_level_in_force():
    times = [0, 1_000, 99_000, 100_000]  # long silence between 1 ms and 99 ms
    levels = np.array([5, 7, 3, 3])
    result = downsample_timeline(times, levels, start_level=0, max_points=2)
    assert result["active_bytes"] == [7, 7]  # the silent stretch holds 7, not a gap
    assert downsample_timeline([], np.array([]), start_level=42)["active_bytes"] == [42]


def test_replay_ends_where_the_allocator_ended(snapshot):
    """Baseline plus every recorded event lands exactly on the allocator's own state at the dump: the blocks
    still allocated in the snapshot's segments, by block size (rounded) and by requested size."""
    replay = replay_trace(snapshot)
    blocks = [b for segment in snapshot["segments"] for b in segment["blocks"] if b["state"] == "active_allocated"]
    assert int(replay.rounded_levels[-1]) == sum(b["size"] for b in blocks)
    assert int(replay.levels[-1]) == sum(b.get("requested_size", b["size"]) for b in blocks)


def test_a_block_allocated_before_recording_and_freed_during_it_counts_in_both_baselines():
    """The fixture frees no pre-recording block, so this builds the smallest snapshot that does: one 100-byte
    block (a 512-byte allocator block) from before recording, freed by the trace, and one still alive."""
    snapshot = {"segments": [{"device": 0, "total_size": 2 << 20, "blocks": [
                    {"address": 2048, "size": 1024, "requested_size": 1000, "state": "active_allocated"}]}],
                "device_traces": [[{"action": "free_completed", "addr": 1024, "size": 100, "frames": []}]]}
    replay = replay_trace(snapshot)
    assert replay.baseline_bytes == 1000 + 100 and replay.rounded_baseline_bytes == 1024 + 512
    assert int(replay.levels[-1]) == 1000 and int(replay.rounded_levels[-1]) == 1024
