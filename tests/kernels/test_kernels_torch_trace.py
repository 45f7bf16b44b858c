"""Phase attribution from a real torch.profiler trace (H200, small, bf16, 3 measured steps)."""
import json
import lzma
from pathlib import Path

import pytest

from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels.summary import analyze_attribution
from sysprof.profiler_core.kernels.torch_trace import attribute_torch_trace, load_trace_events

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "torch_trace.json"
    path.write_bytes(lzma.decompress((DATA / "torch_trace_small_bf16.json.xz").read_bytes()))
    return path


@pytest.fixture(scope="module")
def attribution(trace_path):
    return attribute_torch_trace(trace_path)


def test_every_kernel_event_is_kept(trace_path, attribution):
    kernel_events = [e for e in load_trace_events(trace_path) if e.get("cat") == "kernel"]
    assert len(attribution.kernels) == len(kernel_events)
    total_us = sum(e["dur"] for e in kernel_events)
    assert attribution.kernels["duration"].sum() == pytest.approx(total_us * 1000, rel=1e-6)


def test_backward_kernels_come_from_the_autograd_thread_and_are_attributed(attribution):
    kernels = attribution.kernels
    backward = kernels[kernels["phase"] == "backward"]
    assert len(backward) > len(kernels[kernels["phase"] == "forward"])
    other_thread = (backward["launch_tid"] != attribution.main_tid).mean()
    assert other_thread > 0.9  # launched by the autograd worker, yet inside the main thread's backward range
    assert set(kernels["step"].unique()) == {0, 1, 2}


def test_phase_kernel_time_within_clean_event_time(attribution):
    summary = json.loads((DATA / "torch_small_bf16_summary.json").read_text())
    analysis = analyze_attribution(attribution, "trace", "torch")
    for phase in ("forward", "backward", "optimizer"):
        per_step_ms = analysis["phases"][phase]["gpu_ns"] / 1e6 / 3
        assert 0 < per_step_ms <= 1.2 * summary["phases"][phase]["median_ms"]
    assert analysis["phases"]["other"]["kernels"] == 0
    assert analysis["phases"]["optimizer"]["by_class"].get("optimizer", 0) > 0


def test_not_a_trace_is_a_one_line_error(tmp_path):
    bad = tmp_path / "trace.json"
    bad.write_text('{"foo": 1}')
    with pytest.raises(KernelReportError, match="no traceEvents"):
        attribute_torch_trace(bad)
    bad.write_text("{not json")
    with pytest.raises(KernelReportError, match="not a readable torch.profiler trace"):
        attribute_torch_trace(bad)
