"""Which columns become which lines: the report's figures and the Studies screen's figure are drawn from these
panels (tables/figure_data), built here from saved H200 study directories."""
import math
from pathlib import Path

from sysprof.profiler_core.base.code_specs import short_spec
from sysprof.profiler_core.studies.results import study_tables
from sysprof.profiler_core.studies.table_models import study_models
from sysprof.profiler_core.tables.figure_data import row_label, table_figures
from sysprof.profiler_core.tables.model import main_figure

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
    title, panel = main_figure(study_models(STUDIES / "warmup-small-h200"))
    step = next(series for series in panel.series if series.label == "step")
    warmup = tables["warm-up study"]
    assert title == "warm-up study" and step.x == [row["warm-up steps"] for row in warmup]
    assert step.err == [row["step std ms"] for row in warmup]
    assert main_figure(study_models(STUDIES / "advise-tiny-cpu")) is None


def test_a_users_attention_is_named_by_its_file_and_function_in_the_figure():
    """The H100 study ran tests/data/attention/mine.py:attention beside eager and SDPA: the legend keeps the
    file and the function, not the folders."""
    study = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "reports" / "data" / "h100_2026-11-26" \
        / "20261126-230302-attention"
    title, rows = next(iter(study_tables(study).items()))
    [(_, panels)] = [found for found in table_figures(title, rows) if found[0] == "attention"]
    labels = {series.label for series in panels[0].series}
    assert {"mine.py:attention d=32", "layer.py:CausalSelfAttention d=128", "sdpa d=32"} <= labels
    assert short_spec("compiled:a/b/mine.py:fn") == "compiled:mine.py:fn" and short_spec("pkg.mod:fn") == "pkg.mod:fn"


def test_speedup_bars_leave_out_the_baseline_and_name_a_forward_row_once():
    rows = [{"model": "small", "ctx": 256, "mode": "forward", "measured": "forward", "fp32 speedup": 1.0,
             "bf16 speedup": 0.87},
            {"model": "small", "ctx": 256, "mode": "train", "measured": "train step", "fp32 speedup": 1.0,
             "bf16 speedup": 1.2}]
    [(_, [panel])] = table_figures("fp32 vs bf16 (speedups from the medians)", rows)
    assert [series.label for series in panel.series] == ["bf16 speedup"]  # every fp32 bar is 1×: not drawn
    assert panel.title == "fp32 vs bf16 (speedups from the medians)"
    assert list(panel.series[0].x) == ["small ctx=256 forward", "small ctx=256 train train step"]


def test_two_users_files_of_one_name_stay_two_lines_in_the_figure():
    from sysprof.profiler_core.tables.figure_data import _line_groups

    rows = [{"impl": impl, "dtype": "fp32", "d": 16, "seq": 32, "status": "ok"}
            for impl in ("eager", "lab/a/mine.py:fn", "lab/b/mine.py:fn")]
    assert set(_line_groups(rows)) == {"eager", "lab/a/mine.py:fn", "lab/b/mine.py:fn"}
    assert set(_line_groups(rows[:2])) == {"eager", "mine.py:fn"}
