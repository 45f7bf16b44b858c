"""Which columns become which lines: the report's figures and the Studies screen's figure are drawn from these
panels (render/figure_data), built here from saved H200 study directories."""
import math
from pathlib import Path

from sysprof.profiler_core.render.figure_data import main_figure, row_label, table_figures
from sysprof.profiler_core.studies.results import study_tables

STUDIES = Path(__file__).resolve().parents[1] / "data" / "studies"


def test_attention_panels_plot_time_and_memory_against_seq_and_mark_the_oom_cell():
    tables = study_tables(STUDIES / "attention-oom-h200")
    title, rows = next(iter(tables.items()))
    [(name, panels)] = [found for found in table_figures(title, rows) if found[0] == "attention"]
    assert [panel.title for panel in panels] == ["forward ms", "backward ms", "peak MiB"]
    forward = {series.label: series for series in panels[0].series}
    assert forward["eager"].x == [16384, 32768] and forward["eager"].missing == [65536]
    assert forward["sdpa"].x == [16384, 32768, 65536] and not forward["sdpa"].missing
    eager_first = next(row for row in rows if row["impl"] == "eager" and row["seq"] == 16384)
    assert forward["eager"].y[0] == eager_first["fwd mean ms"]
    assert panels[0].xlog and panels[0].ylog and panels[0].notes == ("× ran out of memory",)


def test_speedup_bars_name_each_row_and_leave_the_oom_row_at_zero():
    tables = study_tables(STUDIES / "attention-oom-h200")
    [(name, [panel])] = table_figures("fwd", tables["fwd mean ms by d × seq"])
    assert name == "speedups" and panel.bars and panel.reference == 1.0
    assert list(panel.series[0].x) == ["d=64 seq=16384", "d=64 seq=32768", "d=64 seq=65536"]
    assert math.isnan(panel.series[0].y[-1]) and panel.notes  # eager ran out of memory there: no bar, said
    assert row_label({"model": "small", "ctx": 256, "measured": "train step"}) == "small ctx=256 train step"


def test_the_warmup_curve_carries_its_spread_and_a_study_without_a_figure_has_none():
    tables = study_tables(STUDIES / "warmup-small-h200")
    title, panel = main_figure(tables)
    step = next(series for series in panel.series if series.label == "step")
    warmup = tables["warm-up study"]
    assert title == "warm-up study" and step.x == [row["warm-up steps"] for row in warmup]
    assert step.err == [row["step std ms"] for row in warmup]
    assert main_figure(study_tables(STUDIES / "advise-tiny-cpu")) is None
