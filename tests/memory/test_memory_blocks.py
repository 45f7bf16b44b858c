"""The allocator-block replay (profiler_core/memory/blocks.py) against torch's own counters on real H100 snapshots
(tests/data/memory_truth), and its split rules on the smallest snapshots that show each."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysprof.profiler_core.memory import analyze_snapshot, load_snapshot, replay_trace

TRUTH = Path(__file__).resolve().parents[1] / "data" / "memory_truth"
MIB = 1 << 20


@pytest.mark.parametrize("name", ["churn", "small_fp32_warm", "small_bf16_cold", "medium_fp32_warm"])
def test_both_peaks_equal_torchs_counters_to_the_byte(name):
    truth = json.loads((TRUTH / "truth.json").read_text())[name]
    replay = replay_trace(load_snapshot(TRUTH / f"{name}.pickle.xz"))
    after, before = truth["after"], truth["before"]
    assert replay.blocks_replayed and replay.blocks_note is None
    # requested sizes: memory_stats()["requested_bytes.all.peak"]
    assert replay.peak_bytes == after["requested_bytes.all.peak"]
    assert replay.baseline_bytes == before["requested_bytes.all.current"]
    # allocator blocks: torch.cuda.max_memory_allocated(), at the start, at the peak and at the dump
    assert replay.block_baseline_bytes == before["allocated_bytes.all.current"]
    assert replay.block_bytes_at(replay.block_peak_index) == after["max_memory_allocated"]
    assert int(replay.block_levels[-1]) == after["allocated_bytes.all.current"]
    # 512-B rounding alone falls short: whole blocks handed out are what it misses
    assert int(replay.rounded_levels.max()) < after["max_memory_allocated"]


def test_the_analysis_reports_the_block_peak_as_max_memory_allocated():
    truth = json.loads((TRUTH / "truth.json").read_text())["small_bf16_cold"]["after"]
    analysis = analyze_snapshot(TRUTH / "small_bf16_cold.pickle.xz")
    assert analysis["peak_allocated_bytes"] == truth["requested_bytes.all.peak"]
    assert analysis["allocator_peak"]["allocated_bytes"] == truth["max_memory_allocated"]
    assert analysis["allocator_peak"]["counter"] == "torch.cuda.max_memory_allocated()"
    assert analysis["peak"]["counter"] == 'torch.cuda.memory_stats()["requested_bytes.all.peak"]'
    assert analysis["peak_allocated_bytes"] <= analysis["peak_allocated_rounded_bytes"] \
        <= analysis["peak_allocated_block_bytes"] <= analysis["allocator_peak"]["allocated_bytes"]


def test_the_fixture_ends_on_the_dumps_own_blocks(snapshot):
    replay = replay_trace(snapshot)
    blocks = [b for segment in snapshot["segments"] for b in segment["blocks"] if b["state"] == "active_allocated"]
    assert replay.blocks_replayed and int(replay.block_levels[-1]) == sum(b["size"] for b in blocks)
    assert replay.block_bytes_at(replay.peak_index) == 2_913_556_480  # 2,910,607,360 with 512-B rounding alone


def one_segment(size: int, trace: list[dict], **settings) -> dict:
    return {"segments": [{"device": 0, "address": 0, "total_size": size, "blocks": []}],
            "device_traces": [[{"action": "segment_alloc", "addr": 0, "size": size}, *trace]],
            "allocator_settings": settings}


def test_a_large_request_takes_the_whole_stretch_when_at_most_1_MiB_would_be_left():
    # 39.06 MiB (the fixture's logits) in a fresh 40 MiB segment: 0.94 MiB would be left, so no split
    replay = replay_trace(one_segment(40 * MIB, [{"action": "alloc", "addr": 0, "size": 40_960_000}]))
    assert int(replay.block_levels[-1]) == 40 * MIB and int(replay.rounded_levels[-1]) == 40_960_000
    # 20 MiB for a 2 MiB request leaves 18 MiB: split
    replay = replay_trace(one_segment(20 * MIB, [{"action": "alloc", "addr": 0, "size": 2 * MIB}]))
    assert int(replay.block_levels[-1]) == 2 * MIB


def test_small_requests_split_at_512_bytes_and_max_split_size_keeps_big_blocks_whole():
    trace = [{"action": "alloc", "addr": 0, "size": 4}, {"action": "alloc", "addr": 512, "size": 1000}]
    replay = replay_trace(one_segment(2 * MIB, trace))
    assert int(replay.block_levels[-1]) == 512 + 1024
    # the last small request leaves 0 < 512 B: it takes the rest
    replay = replay_trace(one_segment(2048, [{"action": "alloc", "addr": 0, "size": 1536},
                                             {"action": "alloc", "addr": 1536, "size": 100}]))
    assert int(replay.block_levels[-1]) == 2048
    whole = one_segment(100 * MIB, [{"action": "alloc", "addr": 0, "size": 30 * MIB}], max_split_size=20 * MIB)
    assert int(replay_trace(whole).block_levels[-1]) == 100 * MIB  # at or above max_split_size: never split


def test_a_freed_neighbour_merges_into_the_stretch_the_next_request_gets():
    trace = [{"action": "alloc", "addr": 0, "size": 4 * MIB}, {"action": "alloc", "addr": 4 * MIB, "size": 15 * MIB},
             {"action": "free_completed", "addr": 0, "size": 4 * MIB},
             {"action": "alloc", "addr": 0, "size": 3 * MIB + 512}]
    replay = replay_trace(one_segment(20 * MIB, trace))
    # 15 MiB left 1 MiB: whole (16 MiB); then 3.0005 MiB in the 4 MiB stretch before it leaves < 1 MiB: whole (4 MiB)
    assert [int(level) for level in replay.block_levels[1:]] == [4 * MIB, 20 * MIB, 16 * MIB, 20 * MIB]


def test_expandable_segments_fall_back_to_rounding_and_say_so():
    snapshot = one_segment(40 * MIB, [{"action": "alloc", "addr": 0, "size": 40_960_000}], expandable_segments=True)
    analysis = analyze_snapshot(snapshot)
    assert analysis["allocator_peak"]["replayed"] is False
    assert analysis["allocator_peak"]["note"] == \
        "expandable segments are not replayed: each request counts rounded up to 512 B"
    assert analysis["allocator_peak"]["allocated_bytes"] == 40_960_000
    assert "(a lower bound here: expandable segments are not replayed" in analysis["notes"][0]


def test_a_trace_that_disagrees_with_the_segments_is_a_lower_bound_and_says_so():
    replay = replay_trace(one_segment(2 * MIB, [{"action": "alloc", "addr": 8 * MIB, "size": 100}]))
    assert not replay.blocks_replayed and int(replay.block_levels[-1]) == 512
    assert replay.blocks_note == ("1 allocations or frees did not fit the replayed segments: "
                                  "they count rounded up to 512 B")
