"""The memory timeline image (PNG and SVG into the run directory) from the real H200 snapshot's analysis: phases
shaded from their marks, the peak marked, and a one-line note instead when matplotlib is absent."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from sysprof.profiler_core.render.memory_plot import MISSING_MATPLOTLIB, peak_point, phase_spans, write_timeline_images
from sysprof.profiler_core.session.analysis import timeline_images

ANALYSIS = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses" / "memory" / "analysis.json"
LABEL = "small · ctx 256 · batch 4 · fp32 · train"


def saved_analysis() -> dict:
    return json.loads(ANALYSIS.read_text())


def test_phase_spans_tile_the_recording_in_step_order():
    timeline = saved_analysis()["timeline"]
    spans = phase_spans(timeline)
    assert [(s["phase"], s["step"]) for s in spans] == [("forward", 0), ("backward", 0), ("optimizer", 0),
                                                        ("forward", 1), ("backward", 1), ("optimizer", 1)]
    assert spans[0]["start"] == timeline["t"][0] and spans[-1]["end"] == timeline["t"][-1]
    assert all(a["end"] == b["start"] for a, b in zip(spans, spans[1:]))


def test_the_marked_peak_is_the_snapshots_peak():
    analysis = saved_analysis()
    t, peak = peak_point(analysis["timeline"])
    assert peak == analysis["peak_allocated_bytes"]  # downsampling keeps each bucket's maximum
    backward = next(s for s in phase_spans(analysis["timeline"]) if s["phase"] == analysis["peak"]["phase"])
    assert backward["start"] <= t <= backward["end"]


def test_png_and_svg_are_written_with_title_peak_and_phases(tmp_path):
    paths = write_timeline_images(saved_analysis()["timeline"], tmp_path, "small · ctx 256: active memory")
    assert [p.name for p in paths] == ["timeline.png", "timeline.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[0].stat().st_size > 10_000
    svg = paths[1].read_text()
    for label in ("small · ctx 256: active memory", "peak 2.68 GiB", "forward", "backward", "optimizer",
                  "time (ms)", "active memory (GiB)"):
        assert label in svg, label


def test_the_memory_pass_names_its_images_or_says_why_there_are_none(tmp_path, monkeypatch):
    analysis = saved_analysis()
    assert timeline_images(LABEL, analysis, tmp_path) == {"images": ["timeline.png", "timeline.svg"]}
    assert "small · ctx 256 · batch 4 · fp32 · train: active memory over 2 recorded steps" in (
        tmp_path / "timeline.svg").read_text()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the `plots` extra were not installed
    assert timeline_images(LABEL, analysis, tmp_path / "none") == {"note": MISSING_MATPLOTLIB}
    assert not (tmp_path / "none").exists()
    empty = analysis | {"timeline": {"t": [0.0], "active_bytes": [], "t_unit": "event"}}
    assert "recorded no allocations" in timeline_images(LABEL, empty, tmp_path)["note"]
