"""`sysprof analyze SNAPSHOT` as a person reads it: both peaks with units, the peak's phase and
recorded step, which peak torch.cuda.max_memory_allocated() reads, and `before recording` instead of None. Rendered
through a real rich Console from the real snapshot (../shared/fixtures/h200_small_fp32)."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from sysprof.profiler_core.memory import analyze_snapshot
from sysprof.profiler_core.render.analysis_report import print_memory_analysis

OLD_ANALYSIS = (Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses" / "memory"
                / "analysis.json")


def rendered(analysis: dict, width: int = 300) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    print_memory_analysis(console, analysis)
    return console.export_text()


def test_the_headline_gives_both_peaks_the_phase_and_step_and_which_one_torch_reports(analysis):
    lines = rendered(analysis).splitlines()
    assert lines[0] == "peak 2.68 GiB requested, 2.71 GiB as allocator blocks · reserved 2.90 GiB"
    assert lines[1] == "at the peak: backward of the 1st of 2 recorded steps, 15.34 ms after recording began"
    assert lines[2] == ("torch.cuda.max_memory_allocated() (reset when recording began) "
                        "reads the allocator-block peak, "
                        "2,913,556,480 B (requests rounded up to 512 B, some given a whole free block); the requested "
                        '2,877,871,112 B is torch.cuda.memory_stats()["requested_bytes.all.peak"]')


def test_blocks_from_before_recording_say_so_instead_of_none(analysis):
    text = rendered(analysis)
    rows = [line for line in text.splitlines() if "MiB" in line and "before" in line]
    assert rows and all(line.count("before recording") == 2 for line in rows)  # phase and where
    assert "None" not in text and "before_recording" not in text
    assert any(line.split()[:5] == ["39.06", "MiB", "activations", "forward", "0"] and "probe/holdout.py:45 in step"
               in line for line in text.splitlines())


def test_the_json_adds_keys_and_keeps_the_contract(analysis):
    assert analysis["peak_allocated_bytes"] == 2_877_871_112  # requested sizes, as before
    assert sum(analysis["by_category"].values()) == analysis["peak_allocated_bytes"]
    assert analysis["peak_allocated_rounded_bytes"] == 2_910_607_360  # 512-B rounding at the same moment, as before
    assert analysis["peak_allocated_block_bytes"] == 2_913_556_480
    assert analysis["allocator_peak"] | {"counter": None} == {
        "event_index": 1943, "phase": "backward", "step": 0, "t_ms": 15.337, "allocated_bytes": 2_913_556_480,
        "replayed": True, "note": None, "counter": None}
    assert analysis["peak"]["recorded_steps"] == 2 and analysis["peak"]["first_step_partial"] is False
    assert "Peak in backward of the 1st of 2 recorded steps (peak.step 0, event 1943)" in analysis["notes"][1]


def test_an_analysis_saved_before_the_block_replay_still_reads_and_says_what_it_lacks():
    old = json.loads(OLD_ANALYSIS.read_text())
    assert "allocator_peak" not in old and "recorded_steps" not in old["peak"]
    lines = rendered(old).splitlines()
    assert lines[0] == "peak 2.68 GiB requested, ≥ 2.71 GiB as allocator blocks · reserved 2.90 GiB"
    assert lines[1] == "at the peak: backward of the 1st of 2 recorded steps, 15.34 ms after recording began"
    assert "2,910,607,360 B (a lower bound here: this analysis predates the block replay" in lines[2]


def test_a_peak_before_recording_or_in_an_unknown_phase_says_so():
    baseline_only = {"segments": [{"device": 0, "address": 0, "total_size": 2 << 20, "blocks": [
        {"address": 0, "size": 1024, "requested_size": 1000, "state": "active_allocated"}]}], "device_traces": [[]]}
    lines = rendered(analyze_snapshot(baseline_only)).splitlines()
    assert lines[1] == "at the peak: before recording began (no phase or step recorded)"
    no_stacks = {"segments": [{"device": 0, "address": 0, "total_size": 2 << 20, "blocks": []}],
                 "device_traces": [[{"action": "alloc", "addr": 0, "size": 4096, "frames": []}]]}
    lines = rendered(analyze_snapshot(no_stacks)).splitlines()
    assert lines[1] == ("at the peak: an unknown phase and step (neither stack frames nor Optimizer.* annotations "
                        "tell)")
    assert any(line.split()[:4] == ["4.00", "KiB", "other", "unknown"] and "no Python frame recorded" in line
               for line in rendered(analyze_snapshot(no_stacks)).splitlines())
