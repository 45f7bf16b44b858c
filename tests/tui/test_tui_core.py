"""Pure pieces behind the screens: reducer, compare verdicts, export formats, telemetry N/A, kernel views."""
import json
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.analysis.verdicts import within_run_verdict
from sysprof.profiler_core.base.events import decode_line
from sysprof.profiler_core.base.nvml import GpuTelemetry, NvmlSampler, decode_throttle_reasons
from sysprof.profiler_core.base.units import telemetry_cells
from sysprof.profiler_core.render.analysis_report import phase_mark_line
from sysprof.profiler_core.render.export import ExportError, osc52, to_csv, to_json, to_latex, to_markdown, write_table
from sysprof.tui.model.kernel_data import KernelView, apply_view, load_kernel_data
from sysprof.tui.model.memory_data import peaks_by_phase
from sysprof.tui.model.run_files import state_from_run_dir
from sysprof.tui.model.settings import load_last_config
from sysprof.tui.model.state import RunState
from sysprof.tui.panes.live import telemetry_line

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
ANALYSED = RUNS / "small-h200-analyses"


def stats(median, std, n=5):
    return {"median_ms": median, "std_ms": std, "n": n}


def test_reducer_keeps_profiled_pass_apart_and_only_unpassed_end_ends_the_run():
    # Event shapes from the session contract; the values only exercise routing.
    state = RunState().apply({"event": "stage", "name": "profiling", "total": 2})
    state = state.apply({"event": "step", "pass": "profiled", "index": 0, "kind": "measured", "wall_ms": 1.0})
    state = state.apply({"event": "notice", "message": "nsys not found: using torch.profiler"})
    state = state.apply({"event": "analysis", "kind": "kernels", "path": "kernels/analysis.json"})
    state = state.apply({"event": "finished", "pass": "profiled", "summary": {}})
    assert state.steps == () and len(state.profiled_steps()) == 1 and state.running
    assert state.stage_progress() == (1, 2) and state.analysis_path("kernels") == "kernels/analysis.json"
    assert state.notices == ("nsys not found: using torch.profiler",)  # a pass's own end is not the run's end
    assert state.apply({"event": "finished", "summary": {"status": "ok"}}).stage == "finished"


def test_client_decodes_notices_and_skips_chatter():
    assert decode_line(b'{"event":"notice","message":"x"}') == {"event": "notice", "message": "x"}
    assert decode_line(b"nsys chatter") is None and decode_line(b'{"no":"event"}') is None


def test_saved_run_reopens_as_a_finished_state():
    state = state_from_run_dir(ANALYSED)
    assert state.stage == "finished" and len(state.steps) == 3 and state.summary["profile"]["backend"] == "nsys"


def test_one_process_per_side_keeps_the_within_run_rule_and_says_noise_is_unknown():
    assert within_run_verdict(stats(10.0, 0.1), stats(9.0, 0.1)) == "faster"
    assert within_run_verdict(stats(10.0, 0.1), stats(11.0, 0.1)) == "slower"
    assert within_run_verdict(stats(10.0, 1.0), stats(11.0, 1.0)) == "within noise"  # 1.0 < 2·√2
    assert within_run_verdict(stats(10.0, 0.0, n=1), stats(20.0, 0.0)) == "too few steps"
    [row] = compare_summaries({"phases": {"step": stats(10.0, 0.1)}}, {"phases": {"step": stats(9.0, 0.1)}})
    assert (row["verdict"], row["n_a"], row["n_b"]) == ("noise unknown", 1, 1)
    assert row["reason"] == "1 process per side: run-to-run noise unknown; use --repeats 5; the steps alone say B is " \
        "faster by 10.0%"
    assert row["p_value"] is None and row["ci_low"] is None and row["test"] == "within-run 2σ"


def test_compare_real_saved_runs_ratio_is_b_over_a():
    summaries = [json.loads((RUNS / name / "summary.json").read_text()) for name in ("tiny-ctx32", "tiny-ctx64")]
    rows = compare_summaries(*summaries)
    step, rate = rows[-2:]
    assert (step["phase"], rate["phase"]) == ("step", "tokens/s")
    assert step["ratio_b_over_a"] == pytest.approx(step["b_median_ms"] / step["a_median_ms"], abs=1e-4)
    assert rate["ratio_b_over_a"] == pytest.approx(summaries[1]["tokens_per_s"] / summaries[0]["tokens_per_s"],
                                                   abs=1e-4)


TABLE = [{"name": "a_b & c|d", "total_ns": 1500, "pct": 12.5}, {"name": "50% #1", "total_ns": 2, "pct": None}]


def test_markdown_csv_json_latex():
    assert to_markdown(TABLE).splitlines()[:3] == ["| name | total_ns | pct |", "|---|---|---|",
                                                   r"| a_b & c\|d | 1500 | 12.5 |"]
    assert to_csv(TABLE).splitlines()[1] == "a_b & c|d,1500,12.5"
    assert json.loads(to_json(TABLE))[1]["pct"] is None
    latex = to_latex(TABLE)
    assert r"a\_b \& c|d & 1500 & 12.5 \\" in latex and r"50\% \#1" in latex and "\\begin{tabular}{lrr}" in latex


def test_dataframe_export_and_write_errors(tmp_path):
    data = load_kernel_data(ANALYSED / "kernels")
    path = write_table(data.table.head(3), tmp_path / "deep" / "k.csv")
    assert path.read_text().startswith("phase,name,class,instances")
    with pytest.raises(ExportError, match="cannot write"):
        write_table(TABLE, "/proc/nope/k.md")
    with pytest.raises(ExportError, match="end the name in"):
        write_table(TABLE, tmp_path / "k.xlsx")


def test_osc52_sequences():
    assert osc52("hi") == "\x1b]52;c;aGk=\a"
    assert osc52("hi", tmux_passthrough=True) == "\x1bPtmux;\x1b\x1b]52;c;aGk=\a\x1b\\"


def test_telemetry_without_nvml_says_why_in_one_line():
    sampler = NvmlSampler(index=99)
    assert not sampler.open()  # CPU machine (or no GPU 99): nothing to open
    sample = sampler.sample()
    assert not sample.available and sample.missing == sampler.missing and sample.missing
    assert all("N/A" in text for _, text in telemetry_cells(sample))
    line = telemetry_line(sample)
    assert line.startswith("[b]GPU[/b] no telemetry: ") and "N/A" not in line
    assert telemetry_line(GpuTelemetry(name="NVIDIA H200", utilization_pct=97)).startswith("[b]GPU[/b] NVIDIA H200")


def test_throttle_reasons_decode_from_the_mask():
    class FakeNvml:
        nvmlClocksEventReasonGpuIdle, nvmlClocksEventReasonSwPowerCap = 1, 4
    assert decode_throttle_reasons(FakeNvml, 5) == ("idle", "power cap")
    assert decode_throttle_reasons(FakeNvml, 0) == () and decode_throttle_reasons(FakeNvml, None) is None


def test_kernel_view_filter_phase_sort_on_the_real_table():
    table = load_kernel_data(ANALYSED / "kernels").table
    rows = apply_view(table, KernelView(name_filter="ELEMENTWISE", phase="backward", sort_by="instances"))
    assert len(rows) and set(rows["phase"]) == {"backward"} and rows["name"].str.contains("elementwise").all()
    assert list(rows["instances"]) == sorted(rows["instances"], reverse=True)
    assert KernelView().sorted_by("total_ns").descending is False and KernelView().sorted_by("name").sort_by == "name"


def test_memory_peaks_by_phase_and_marks_from_the_real_analysis():
    analysis = json.loads((ANALYSED / "memory" / "analysis.json").read_text())
    peaks = peaks_by_phase(analysis["timeline"])
    assert max(peaks.values()) == analysis["peak_allocated_bytes"] and peaks["backward"] == max(peaks.values())
    marks = phase_mark_line(analysis["timeline"], 60)
    assert len(marks) == 60 and marks[0] == "F" and "B" in marks and "O" in marks


def test_remembered_config_round_trip_and_corruption(tmp_path):
    assert load_last_config(tmp_path / "none.json") == (None, None)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": "tiny", "bogus": 1}))
    config, notice = load_last_config(bad)
    assert config is None and "bogus" in notice


def test_later_passes_do_not_move_the_clean_run():
    """A profiled or memory pass's hello, stages and end events (tagged with "pass") leave the clean run alone."""
    from sysprof.tui.model.state import RunState

    state = RunState().apply({"event": "hello", "run_dir": "runs/a", "env": {"device_type": "cuda"}})
    state = state.apply({"event": "stage", "name": "measured", "total": 5})
    state = state.apply({"event": "stage", "name": "profiling"})
    for event in ({"event": "hello", "run_dir": "runs/a/profiled", "pass": "profiled"},
                  {"event": "stage", "name": "measured", "total": 5, "pass": "profiled"},
                  {"event": "step", "index": 0, "wall_ms": 40.0, "phases_ms": {}, "pass": "profiled"}):
        state = state.apply(event)
    assert state.run_dir == "runs/a" and state.stage == "profiling"
    assert len(state.profiled_steps()) == 1 and state.steps == ()


def test_inflation_is_shown_as_the_sessions_ratio():
    """The session stores profiled/clean (H200, small fp32: 38.42 ms under nsys vs 31.43 ms clean)."""
    from sysprof.tui.model.kernel_text import backend_line

    profile = {"backend": "nsys", "profiled_median_ms": 38.42, "clean_median_ms": 31.43, "inflation": 38.42 / 31.43}
    line = backend_line(profile, {})
    assert "×1.22" in line and "38.4 ms vs clean 31.4 ms" in line


def test_one_factory_makes_the_app_for_the_user_and_for_tests(tmp_path):
    """The entry point's app reads the user's settings, samples the GPU and inspects live; the tests' and the
    benchmarks' app does none of it unless asked, so its frames wait on no process."""
    from sysprof.tui.app import build_app
    from sysprof.tui.model.settings import default_settings_path

    user = build_app(tmp_path, for_user=True)
    assert (user.sample_gpu, user.live_inspect, user.settings_path) == (True, True, default_settings_path())
    driven = build_app(tmp_path, [tmp_path / "a-run"], live_inspect=True)
    assert (driven.sample_gpu, driven.live_inspect, driven.settings_path) == (False, True, None)
    assert driven.runs_root == tmp_path and driven.open_runs == [tmp_path / "a-run"]


def test_a_cancelled_run_keeps_the_steps_its_summary_counts_even_one_whose_event_never_came():
    """A cancel can stop the runner after it saved a step and before it sent the step's event (seen in CI: Live
    said 6 kept steps, the run directory 7). The summary is what the run kept."""
    state = RunState(stage="measured", planned_steps=5000)
    for index in range(6):
        state = state.apply({"event": "step", "kind": "measured", "index": index, "wall_ms": 10.0, "phases_ms": {}})
    summary = {"status": "failed", "error": {"kind": "cancelled"}, "phases": {"step": {"n": 7, "median_ms": 10.0}}}
    state = state.apply({"event": "failed", "kind": "cancelled", "message": "stopped by SIGINT", "summary": summary})
    assert (len(state.steps), state.kept_steps, state.stage_progress()) == (6, 7, (7, 5000))
