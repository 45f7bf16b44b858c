"""Attention sub-ranges: the model's ranges (scores apart from scale and mask), their kernel tables from a real
H200 profile, and the FLOPs-vs-time table of a profiled run."""
from __future__ import annotations

import pytest
import torch

import sysprof.models.transformer as transformer
from sysprof.models.phases import ATTENTION_MASK, ATTENTION_OUTPUT, ATTENTION_PARTS, ATTENTION_SCORES, ATTENTION_SOFTMAX
from sysprof.profiler_core.kernels.attention_flops import attention_flops, profiled_flops_rows, sub_range_rows
from sysprof.profiler_core.kernels.attribution import attribute_kernels
from sysprof.profiler_core.kernels.kernel_stats import attention_kernel_table, attention_summary

SHAPE = {"batch": 4, "heads": 12, "ctx": 256, "d_head": 64}  # the fixture's run: small, batch 4, ctx 256


@pytest.fixture(scope="module")
def attribution(h200_sqlite):
    return attribute_kernels(h200_sqlite)


def ops_by_range(monkeypatch) -> dict[str, set[str]]:
    """The aten ops each attention range encloses in one CPU forward (ranges as record_function, as under
    torch.profiler)."""
    monkeypatch.setattr(transformer, "nvtx_range", torch.profiler.record_function)
    q, k, v = (torch.randn(1, 2, 8, 4) for _ in range(3))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        transformer.naive_attention(q, k, v)
    ops: dict[str, set[str]] = {}
    for event in prof.events():
        parent = event.cpu_parent
        if parent is not None and parent.name in ATTENTION_PARTS:
            ops.setdefault(parent.name, set()).add(event.name)
    return ops


def test_scores_range_is_the_matmul_alone_and_scale_and_mask_have_their_own(monkeypatch):
    ops = ops_by_range(monkeypatch)
    assert list(ops) == [ATTENTION_SCORES, ATTENTION_MASK, ATTENTION_SOFTMAX, ATTENTION_OUTPUT]
    assert ops[ATTENTION_SCORES] == {"aten::einsum"}
    assert {"aten::div", "aten::masked_fill"} <= ops[ATTENTION_MASK]
    assert ops[ATTENTION_SOFTMAX] == {"aten::softmax"}


def test_an_older_profile_keeps_three_parts_and_matmul_is_gemm_time_only(attribution):
    """The fixture predates the split: its scores range holds the scale and mask kernels, which must not count as
    matmul time."""
    summary = attention_summary(attribution)
    assert list(summary["by_part"]) == [ATTENTION_SCORES, ATTENTION_SOFTMAX, ATTENTION_OUTPUT]
    assert summary["mask_range"] is False
    assert summary["matmul_ns"] == summary["by_class"]["gemm"] == 2062820
    assert summary["softmax_ns"] == summary["by_part"][ATTENTION_SOFTMAX] == 568544
    kernels = attribution.kernels
    scores = kernels[kernels["attention_part"] == ATTENTION_SCORES]
    assert summary["scale_mask_ns"] == scores.loc[scores["class"] != "gemm", "duration"].sum()
    assert sum(summary["by_part"].values()) == summary["gpu_ns"]


def test_sub_range_kernel_table_sums_to_each_part(attribution):
    table = attention_kernel_table(attribution)
    summary = attention_summary(attribution)
    assert list(dict.fromkeys(table["phase"])) == ["attn QKᵀ+mask", "attn softmax", "attn PV"]
    totals = table.groupby("phase", sort=False)["total_ns"].sum()
    assert totals.tolist() == list(summary["by_part"].values())
    assert table.groupby("phase")["pct_of_phase"].sum().round(0).eq(100).all()
    assert (table.loc[table["phase"] == "attn softmax", "class"] == "softmax").all()
    assert table["instances"].eq(60).all()  # 12 layers × 5 profiled steps, one launch each


def test_flops_against_kernel_time_per_profiled_run(attribution):
    summary = attention_summary(attribution)
    rows = {row["part"]: row for row in profiled_flops_rows(summary, SHAPE)}
    per_call = attention_flops(4 * 12, 256, 64)
    matmul, softmax = rows["matmul (QKᵀ + PV)"], rows["softmax"]
    assert matmul["GFLOP"] == round(per_call["matmul"] * 60 / 1e9, 3)
    assert matmul["FLOPs ÷ softmax"] == round(4 * 64 / 5, 2)  # the reports' 4·d/5
    assert matmul["ms"] == pytest.approx(2.06282) and softmax["ms"] == pytest.approx(0.568544)
    assert matmul["time ÷ softmax"] == pytest.approx(2.06282 / 0.568544, abs=0.01)
    assert matmul["TFLOP/s"] == pytest.approx(per_call["matmul"] * 60 / 2.06282e-3 / 1e12, abs=0.01)
    assert profiled_flops_rows(summary, None) == []  # a model of your own: no shape, no FLOPs


def test_sub_range_rows_say_when_scores_include_scale_and_mask(attribution):
    rows = sub_range_rows(attention_summary(attribution))
    assert rows[0]["sub-range"] == f"{ATTENTION_SCORES} (with scale and mask)"
    assert sum(row["% of attention"] for row in rows) == pytest.approx(100, abs=0.2)
    assert rows[1]["µs per call"] == round(568544 / 60 / 1e3, 2)
