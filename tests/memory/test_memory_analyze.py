"""analyze_snapshot end to end: the DESIGN.md §2 contract keys, JSON, sorted top allocations, frames."""
from __future__ import annotations

import json

from sysprof.profiler_core.memory import analyze_snapshot


def test_contract_keys_and_json(analysis):
    for key in ("peak_allocated_bytes", "peak_reserved_bytes", "top_allocations", "by_category", "timeline",
                "n_events", "notes"):
        assert key in analysis
    assert {"t", "active_bytes", "phase_marks"} <= set(analysis["timeline"])
    assert analysis["n_events"] == 11226
    assert json.loads(json.dumps(analysis)) == analysis


def test_top_allocations_sorted_and_alive_at_peak(analysis):
    top = analysis["top_allocations"]
    assert len(top) == 20
    sizes = [row["size_bytes"] for row in top]
    assert sizes == sorted(sizes, reverse=True)
    peak_ms = analysis["peak"]["t_ms"]
    for row in top:
        assert {"size_bytes", "phase", "category", "frame", "address"} <= set(row)
        if row["allocated_at_ms"] is not None:
            assert row["allocated_at_ms"] <= peak_ms
        if row["freed_at_ms"] is not None:
            assert row["freed_at_ms"] >= peak_ms


def test_top_allocations_name_user_frames_not_torch_internals(analysis):
    top = analysis["top_allocations"]
    logits_rows = [row for row in top if row["size_bytes"] == 40_960_000]
    assert [row["frame"] for row in logits_rows] == [
        "probe/holdout.py:45 in step", "autograd NllLossBackward0", "autograd LogSoftmaxBackward0"]
    for row in top:
        frame = row["frame"] or ""
        assert "site-packages" not in frame and "<frozen" not in frame
        if row["phase"] == "before_recording":
            assert row["frame"] is None  # no stack was recorded for it


def test_load_from_path_equals_loaded_dict(snapshot_xz_path, analysis):
    from_file = analyze_snapshot(snapshot_xz_path, top_n=20)
    assert from_file["peak_allocated_bytes"] == analysis["peak_allocated_bytes"]
    assert from_file["by_category"] == analysis["by_category"]
    assert from_file["source"] == str(snapshot_xz_path)


def test_shape_hint_agrees_with_what_softmax_revealed(snapshot, analysis):
    hinted = analyze_snapshot(snapshot, shape_hint={"batch": 4, "heads": 12, "ctx": 256, "bytes_per_element": 4})
    assert hinted["by_category"] == analysis["by_category"]


def test_empty_trace_reports_the_baseline():
    snap = {"segments": [{"device": 0, "total_size": 2 << 20, "blocks": [
        {"address": 1, "size": 1024, "requested_size": 1000, "state": "active_allocated"}]}], "device_traces": [[]]}
    result = analyze_snapshot(snap)
    assert result["peak_allocated_bytes"] == 1000 and result["peak"]["phase"] == "before_recording"
    assert result["peak_allocated_rounded_bytes"] == 1024 and result["peak_reserved_bytes"] == 2 << 20
    assert result["by_category"]["parameters"] == 1000 and result["timeline"]["active_bytes"] == [1000]


def test_terminal_sparkline_keeps_the_peak_column():
    from sysprof.profiler_core.render.analysis_report import timeline_sparkline

    levels = [0] * 500 + [10] + [2] * 499  # one spike between flat stretches
    line = timeline_sparkline(levels, 50)
    assert len(line) == 50 and line.count("█") == 1 and line[25] == "█"
    assert set(line[:25]) == {" "} and set(line[26:]) == {"▂"}
