"""Phase attribution on the real H200 nsys export, checked against nsys's own CSVs and CUDA events."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels import (
    analyze_sqlite,
    analyze_stats_dir,
    attribute_kernels,
    containing_range,
    phase_kernel_table,
    read_stats_csv,
)
from sysprof.profiler_core.kernels.kernel_stats import busy_union_ns, kernel_table, phase_summaries

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
H200 = FIXTURES / "h200_small_fp32"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="../shared/fixtures is not beside this checkout")


@pytest.fixture(scope="session")
def attribution(h200_sqlite):
    return attribute_kernels(h200_sqlite)


@pytest.fixture(scope="session")
def event_truth() -> list[dict]:
    return json.loads((H200 / "cuda_event_truth.json").read_text())["rows"]


@pytest.fixture(scope="session")
def nsys_range_kernels() -> dict:
    """nsys nvtx_kern_sum totals per range: right for ranges whose kernels the same thread launched."""
    rows = read_stats_csv(H200 / "nvtx_kern_sum.csv")
    return rows.groupby("range")[["instances", "total_ns"]].sum().to_dict("index")


def test_total_kernel_time_matches_nsys_kernel_summary(attribution):
    csv_total = read_stats_csv(H200 / "cuda_gpu_kern_sum.csv")["total_ns"].sum()
    total = attribution.kernels["duration"].sum()
    assert abs(total - csv_total) <= 0.005 * csv_total
    assert len(attribution.kernels) == read_stats_csv(H200 / "cuda_gpu_kern_sum.csv")["instances"].sum()


def test_kernel_table_reproduces_nsys_statistics(attribution):
    ours = kernel_table(attribution.kernels, attribution.names).set_index("name")
    theirs = read_stats_csv(H200 / "cuda_gpu_kern_sum.csv").set_index("name")
    assert set(ours.index) == set(theirs.index)
    joined = ours.join(theirs.add_suffix("_nsys"))
    assert (joined["instances"] == joined["instances_nsys"]).all()
    assert (joined["total_ns"] == joined["total_ns_nsys"]).all()
    for field in ("avg_ns", "med_ns", "min_ns", "max_ns", "std_ns"):
        assert np.allclose(joined[field], joined[f"{field}_nsys"], atol=0.1), field


def test_backward_gets_autograd_thread_kernels_within_event_time(attribution, event_truth):
    backward = attribution.kernels[attribution.kernels["phase"] == "backward"]
    assert len(backward) == 5570
    per_step_ms = backward.groupby("step")["duration"].sum() / 1e6
    for row in event_truth:
        assert 0.6 * row["bwd_ms"] <= per_step_ms[row["step"]] <= row["bwd_ms"], row
    threads = phase_summaries(attribution)["backward"]["launch_threads"]
    assert threads["pt_autograd_0"] == 5565


def test_forward_and_optimizer_kernel_time_within_event_time(attribution, event_truth):
    kernels = attribution.kernels
    for phase, event_key in (("forward", "fwd_ms"), ("optimizer", "opt_ms")):
        per_step_ms = kernels[kernels["phase"] == phase].groupby("step")["duration"].sum() / 1e6
        for row in event_truth:
            # Under nsys the forward pass is launch-bound, so only the upper bound is tight.
            assert 0.3 * row[event_key] <= per_step_ms[row["step"]] <= row[event_key], (phase, row)


def test_main_thread_ranges_agree_with_nsys_same_thread_matching(attribution, nsys_range_kernels):
    kernels = attribution.kernels
    for phase, nsys_range in (("forward", "forward"), ("optimizer", "optimizer step")):
        in_phase = kernels[kernels["phase"] == phase]
        assert (len(in_phase), in_phase["duration"].sum()) == tuple(nsys_range_kernels[nsys_range].values())
    for part in ("computing attention scores", "computing softmax", "final matmul"):
        in_part = kernels[kernels["attention_part"] == part]
        assert (len(in_part), in_part["duration"].sum()) == tuple(nsys_range_kernels[part].values())
    in_attention = kernels[kernels["in_attention"]]
    assert in_attention["duration"].sum() == nsys_range_kernels["scaled dot product attention"]["total_ns"]


def test_every_kernel_lands_in_a_step_and_a_phase(attribution):
    kernels = attribution.kernels
    assert sorted(kernels["step"].unique()) == [0, 1, 2, 3, 4]
    assert (kernels.groupby("step").size() == 2032).all()
    assert (kernels["phase"] == "other").sum() == 0
    assert attribution.notes == []


def test_phase_summary_numbers(attribution):
    phases = phase_summaries(attribution)
    backward = phases["backward"]
    assert backward["gpu_ns"] == 84103290 and backward["kernels_per_step"] == 1114.0
    assert backward["wall_ns"] == read_stats_csv(H200 / "nvtx_sum.csv").set_index("range").loc["backward", "total_ns"]
    assert 0 < backward["busy_pct"] <= 100
    assert backward["gpu_union_ns"] <= backward["gpu_ns"]
    assert sum(backward["by_class"].values()) == backward["gpu_ns"]
    assert backward["gemm_fraction"] > 0.7
    assert all(k["class"] != "gemm" for k in backward["top_non_gemm"])
    assert phases["optimizer"]["by_class"] == {"optimizer": phases["optimizer"]["gpu_ns"]}


def test_containing_range_lookup():
    starts, ends = np.array([30, 10, 50]), np.array([40, 20, 60])
    times = np.array([5, 10, 15, 20, 25, 35, 60, 61, -1])
    assert containing_range(times, starts, ends).tolist() == [-1, 1, 1, 1, -1, 0, 2, -1, -1]
    assert containing_range(times, starts[:0], ends[:0]).tolist() == [-1] * len(times)


def test_union_of_overlapping_kernels():
    assert busy_union_ns(np.array([0, 5, 20, 22]), np.array([10, 8, 30, 25])) == 20
    assert busy_union_ns(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 0


def test_analyze_sqlite_json_contract(h200_sqlite):
    result = json.loads(json.dumps(analyze_sqlite(h200_sqlite)))
    assert result["source"] == str(h200_sqlite)
    assert set(result["phases"]) == {"forward", "backward", "optimizer", "other"}
    for phase in result["phases"].values():
        assert {"gpu_ns", "kernels", "by_class", "wall_ns", "busy_pct"} <= set(phase)
    assert all(0 <= f <= 1 for f in result["gemm_fraction"].values())
    # the whole train step: GEMM time of forward, backward and optimizer over their kernel time, not a mean of fractions
    phases = [result["phases"][p] for p in ("forward", "backward", "optimizer")]
    gemm = sum(p["by_class"].get("gemm", 0) for p in phases)
    assert result["gemm_fraction"]["step"] == round(gemm / sum(p["gpu_ns"] for p in phases), 4)
    assert result["gemm_fraction"]["optimizer"] < result["gemm_fraction"]["step"] < result["gemm_fraction"]["backward"]
    first = result["kernels"][0]
    assert {"name", "class", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns"} <= set(first)
    assert first["short_name"] == ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_"
                                   "aligna4_alignc4_execute_kernel__5x_cublas")
    assert first["class"] == "gemm" and first["total_ns"] == 26430941
    attention = result["attention"]
    assert attention["softmax_ns"] == 568544 and attention["ranges"] == 60
    assert attention["softmax_ns"] < attention["matmul_ns"]
    assert result["main_thread"] == "python3" and len(result["steps"]) == 5


def test_stats_dir_gives_backward_the_autograd_threads_kernels_as_the_sqlite_does(h200_sqlite):
    """The CSVs alone: nvtx_kern_sum lists backward's kernels with no range on the autograd thread (TID 459), not
    the thread that pushed the phase ranges (430); counted as backward, they equal the sqlite analysis of the same
    report, which attributes each kernel by its launch time."""
    result = analyze_stats_dir(H200)
    json.dumps(result)
    from_sqlite = analyze_sqlite(h200_sqlite)
    for phase in ("forward", "backward", "optimizer"):
        assert result["phases"][phase]["gpu_ns"] == from_sqlite["phases"][phase]["gpu_ns"], phase
        assert result["phases"][phase]["kernels"] == from_sqlite["phases"][phase]["kernels"], phase
    assert result["phases"]["backward"]["gpu_ns"] == 84103290 and result["phases"]["backward"]["kernels"] == 5570
    assert result["phases"]["other"]["gpu_ns"] == 0
    [note] = [note for note in result["notes"] if note.startswith("backward includes")]
    assert "5565 kernels (84.100 ms)" in note and "thread(s) 459" in note and "thread 430" in note
    assert "assumed" in note  # the assumption is said, not hidden
    assert result["totals"]["gpu_ns"] == 142467640


def test_stats_without_threads_keep_nsys_numbers_and_say_backward_is_undercounted(tmp_path):
    """An nvtx_kern_sum without its TID column (as older reports and hand-edited CSVs have) cannot tell the autograd
    thread apart: backward stays as nsys gives it, with the note saying why."""
    for name in ("cuda_gpu_kern_sum.csv", "nvtx_sum.csv"):
        shutil.copy(H200 / name, tmp_path / name)
    lines = (H200 / "nvtx_kern_sum.csv").read_text().splitlines()
    (tmp_path / "nvtx_kern_sum.csv").write_text("\n".join(",".join(cell for i, cell in enumerate(line.split(","))
                                                                     if i != 3) for line in lines) + "\n")
    result = analyze_stats_dir(tmp_path)
    assert result["phases"]["backward"]["kernels"] == 5
    assert result["phases"]["other"]["gpu_ns"] == pytest.approx(84099738)
    assert any("undercounted" in note for note in result["notes"])


def test_phase_kernel_table_sums_to_phase_totals(attribution):
    table = phase_kernel_table(attribution)
    phases = phase_summaries(attribution)
    sums = table.groupby("phase", observed=True)["total_ns"].sum()
    assert {p: int(ns) for p, ns in sums.items()} == {p: s["gpu_ns"] for p, s in phases.items() if s["gpu_ns"]}
    assert list(table.columns[:3]) == ["phase", "name", "class"]
    assert table.loc[table["phase"] == "backward", "pct_of_phase"].sum() == pytest.approx(100, abs=0.1)
    assert len(phase_kernel_table(H200)) > 0


def copy_without(h200_sqlite, tmp_path, table: str):
    """The real export with one table dropped, as older or partial exports come."""
    stripped = tmp_path / f"without_{table}.sqlite"
    shutil.copy(h200_sqlite, stripped)
    with sqlite3.connect(stripped) as conn:
        conn.execute(f"DROP TABLE {table}")
    return stripped


def test_export_without_nvtx_puts_everything_in_other(h200_sqlite, tmp_path):
    stripped = copy_without(h200_sqlite, tmp_path, "NVTX_EVENTS")
    result = analyze_sqlite(stripped)
    assert result["phases"]["other"]["kernels"] == 10160
    assert any("no NVTX ranges" in note for note in result["notes"])


def test_export_without_runtime_table_notes_unmatched_kernels(h200_sqlite, tmp_path):
    stripped = copy_without(h200_sqlite, tmp_path, "CUPTI_ACTIVITY_KIND_RUNTIME")
    attribution = attribute_kernels(stripped)
    assert (attribution.kernels["phase"] == "other").all()
    assert "10160 kernels" in attribution.notes[0]


def test_bad_inputs_raise_one_line_typed_errors(h200_sqlite, tmp_path):
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(h200_sqlite.read_bytes()[:300_000])
    for bad in (truncated, H200 / "nvtx_sum.csv", tmp_path / "missing.sqlite"):
        with pytest.raises(KernelReportError) as error:
            analyze_sqlite(bad)
        assert "\n" not in str(error.value)
    with pytest.raises(KernelReportError):
        analyze_stats_dir(tmp_path)
