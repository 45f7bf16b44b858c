"""Launch-bound or GPU-bound per phase, on real profiler output: the H200 nsys export of CS336 small fp32
(../shared/fixtures/h200_small_fp32), the tiny fp32 step's nsys export and torch trace (tests/data/module_ranges),
and the small bf16 torch trace (tests/data/traces). Only the gap-splitting unit tests use hand-built intervals."""
from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np
import pytest

from sysprof.profiler_core.kernels.launch_bound import KERNEL_WAIT_NS, SpanSplit, split_span
from sysprof.profiler_core.kernels.launch_verdict import (
    GPU_BOUND,
    HOST_WAIT_BOUND_PCT,
    LAUNCH_BOUND,
    LAUNCH_BOUND_REMEDY,
)
from sysprof.profiler_core.kernels.summary import analyze_attribution, analyze_sqlite, analyze_stats_dir
from sysprof.profiler_core.kernels.torch_trace import attribute_torch_trace
from sysprof.profiler_core.render.launch_report import launch_table, verdict_lines
from sysprof.profiler_core.tables.launch_cells import short_verdict

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "h200_small_fp32"
PHASES = ("forward", "backward", "optimizer")
SOURCES = {  # name -> (compressed file, reader)
    "h200_small_fp32_nsys": (H200 / "report.sqlite.xz", "sqlite"),
    "tiny_fp32_nsys": (DATA / "module_ranges" / "profile.sqlite.xz", "sqlite"),
    "tiny_fp32_torch": (DATA / "module_ranges" / "torch_trace.json.xz", "torch"),
    "small_bf16_torch": (DATA / "traces" / "torch_trace_small_bf16.json.xz", "torch"),
}


def _analysis(name: str, tmp_path_factory) -> dict:
    packed, reader = SOURCES[name]
    if not packed.is_file():
        pytest.skip(f"{packed.name} is not here (../shared/fixtures beside the checkout)")
    path = tmp_path_factory.mktemp(name) / packed.name.removesuffix(".xz")
    path.write_bytes(lzma.decompress(packed.read_bytes()))
    if reader == "sqlite":
        return analyze_sqlite(path)
    return analyze_attribution(attribute_torch_trace(path), str(path), "torch")


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    cache: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in cache:
            cache[name] = json.loads(json.dumps(_analysis(name, tmp_path_factory)))
        return cache[name]
    return get


# --- the gap-splitting function on hand-built test intervals (ns) --------------------------------------------

def test_gaps_split_by_whether_the_launch_came_late_and_by_length():
    starts = np.array([0, 11_000, 30_000, 45_000])
    ends = np.array([10_000, 20_000, 40_000, 50_000])
    api_ends = np.array([-1, 5_000, 25_000, 12_000])  # 2nd queued early, 3rd launched after the GPU went idle
    split = split_span(starts, ends, api_ends)
    assert split == SpanSplit(span_ns=50_000, busy_ns=34_000, host_wait_ns=10_000, kernel_wait_ns=1_000,
                              other_ns=5_000)
    assert split.busy_ns + split.host_wait_ns + split.kernel_wait_ns + split.other_ns == split.span_ns


def test_overlapping_kernels_count_once_and_leave_no_negative_gap():
    # two streams: the second kernel runs inside the first; the third starts after both, queued long before
    split = split_span(np.array([0, 2_000, 12_000]), np.array([10_000, 5_000, 20_000]), np.array([-1, 0, 0]))
    assert split == SpanSplit(20_000, 18_000, 0, 0, 2_000)  # a 2 µs queued gap is not below KERNEL_WAIT_NS
    assert split_span(np.array([0, 11_999]), np.array([10_000, 12_000]), np.array([0, 0])).kernel_wait_ns == 1_999


def test_unknown_launch_calls_never_count_as_host_wait_and_empty_is_zero():
    split = split_span(np.array([0, 50_000]), np.array([10_000, 60_000]), np.array([-1, -1]))
    assert (split.host_wait_ns, split.other_ns) == (0, 40_000)
    assert split_span(np.array([], dtype=np.int64), np.array([], dtype=np.int64), np.array([], dtype=np.int64)) \
        == SpanSplit()
    assert SpanSplit().percentages()["busy_pct"] is None
    assert KERNEL_WAIT_NS == 2_000


# --- every real profile ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SOURCES)
def test_busy_never_passes_100_and_the_span_adds_up(analyses, name):
    phases = analyses(name)["phases"]
    for phase in PHASES:
        stats, launch = phases[phase], phases[phase]["launch"]
        assert 0 < stats["busy_pct"] <= 100 and stats["busy_pct"] == launch["busy_pct"], phase
        parts = ("busy", "host_wait", "kernel_wait", "other")
        assert sum(launch[f"{part}_ns"] for part in parts) == launch["span_ns"], phase
        assert sum(launch[f"{part}_pct"] for part in parts) == pytest.approx(100, abs=0.03), phase
        assert launch["busy_ns"] == stats["gpu_union_ns"] <= stats["gpu_ns"]  # one stream: union = sum here
        assert launch["launch_calls"] == stats["kernels"]  # every kernel came from a cu(da)LaunchKernel* call
        assert launch["verdict"] == (LAUNCH_BOUND if launch["host_wait_pct"] >= HOST_WAIT_BOUND_PCT else GPU_BOUND)
    assert phases["other"]["launch"] is None


def test_h200_optimizer_busy_was_over_100_and_no_longer_is(analyses):
    optimizer = analyses("h200_small_fp32_nsys")["phases"]["optimizer"]
    old_busy_pct = 100 * optimizer["gpu_union_ns"] / optimizer["wall_ns"]  # the figure before: GPU time / range wall
    assert old_busy_pct == pytest.approx(144.72, abs=0.01)
    assert optimizer["launch"]["span_ns"] > optimizer["wall_ns"]  # its kernels run on after the host closed the range
    assert optimizer["busy_pct"] == pytest.approx(97.23, abs=0.01)


def test_h200_small_fp32_forward_is_launch_bound_because_the_gpu_waits_for_launches(analyses):
    forward = analyses("h200_small_fp32_nsys")["phases"]["forward"]["launch"]
    assert forward["verdict"] == LAUNCH_BOUND and forward["remedy"] == LAUNCH_BOUND_REMEDY
    assert forward["host_wait_pct"] == pytest.approx(48.16, abs=0.01) and forward["busy_pct"] == pytest.approx(49.21)
    assert forward["median_kernel_us"] < forward["median_launch_us"]  # 2.6 µs kernels, 4.7 µs launch calls
    assert forward["median_host_lead_us"] < 5  # each kernel starts as soon as its launch returns
    assert "host-wait 48% of the GPU span ≥ 30%" in forward["reason"]


def test_h200_small_fp32_backward_is_gpu_bound_though_most_kernels_are_shorter_than_their_launch(analyses):
    backward = analyses("h200_small_fp32_nsys")["phases"]["backward"]["launch"]
    assert backward["verdict"] == GPU_BOUND
    assert backward["host_wait_pct"] == pytest.approx(8.4, abs=0.01)  # < HOST_WAIT_BOUND_PCT: the reason
    assert backward["busy_pct"] == pytest.approx(84.09, abs=0.01)
    assert backward["shorter_than_launch_pct"] > 50  # the short kernels alone would call it launch-bound ...
    assert backward["median_host_lead_us"] > 100  # ... but the GEMMs let the host run ~0.4 ms ahead
    assert "faster kernels can turn it launch-bound" in backward["reason"]
    assert backward["remedy"].startswith("gemm 83%: bf16")


def test_h200_small_fp32_optimizer_is_gpu_bound_with_the_host_far_ahead(analyses):
    optimizer = analyses("h200_small_fp32_nsys")["phases"]["optimizer"]["launch"]
    assert optimizer["verdict"] == GPU_BOUND and optimizer["host_wait_ns"] == 0
    assert optimizer["shorter_than_launch_pct"] == 0 and optimizer["median_host_lead_us"] > 500
    assert "--optimizer-impl fused" in optimizer["remedy"]


@pytest.mark.parametrize("name", ["tiny_fp32_nsys", "tiny_fp32_torch"])
def test_tiny_fp32_step_is_launch_bound_in_every_phase(analyses, name):
    for phase in PHASES:
        launch = analyses(name)["phases"][phase]["launch"]
        assert launch["verdict"] == LAUNCH_BOUND, phase
        assert launch["host_wait_pct"] > 50 and launch["busy_pct"] < 40, phase
        assert launch["median_host_lead_us"] < 3  # the GPU runs each kernel as soon as it is launched
        assert launch["remedy"].startswith("bf16 will not help")
    forward = analyses(name)["phases"]["forward"]["launch"]
    assert forward["host_wait_pct"] > 90 and forward["shorter_than_launch_pct"] > 80


def test_small_bf16_under_torch_profiler_is_launch_bound_but_its_optimizer_is_not(analyses):
    phases = analyses("small_bf16_torch")["phases"]
    assert [phases[p]["launch"]["verdict"] for p in PHASES] == [LAUNCH_BOUND, LAUNCH_BOUND, GPU_BOUND]
    assert phases["backward"]["launch"]["host_wait_pct"] > 80


def test_nsys_csvs_alone_give_no_busy_share_and_say_why():
    if not H200.is_dir():
        pytest.skip("../shared/fixtures is not beside this checkout")
    result = analyze_stats_dir(H200)
    assert all(result["phases"][p]["busy_pct"] is None and result["phases"][p]["launch"] is None for p in PHASES)
    assert any("launch-bound verdict need" in note for note in result["notes"])


def test_rendered_table_and_lines(analyses):
    analysis = analyses("h200_small_fp32_nsys")
    table = launch_table(analysis)
    assert table is not None and table.row_count == 3
    lines = verdict_lines(analysis)
    assert lines[0].startswith("[b]forward[/b]: launch-bound — host-wait 48%")
    assert lines[1] == f"  remedy: {LAUNCH_BOUND_REMEDY}"
    assert [short_verdict(analysis, p) for p in (*PHASES, "other")] == ["launch", "GPU", "GPU", ""]
    assert launch_table({"phases": {"forward": {"busy_pct": 50.0}}}) is None  # an analysis saved before `launch`
