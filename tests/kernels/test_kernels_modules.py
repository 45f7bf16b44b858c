"""Kernels by module type (--nvtx-modules): the nested-range lookups, the labelling rule on hand-written frames
(tiny inputs that spell out each case, not profiler output), and the real H200 exports, which hold no module
ranges: an empty `modules` section, no crash."""
from __future__ import annotations

import lzma
from pathlib import Path

import numpy as np
import pandas as pd

from sysprof.models.phases import module_range
from sysprof.profiler_core.base.module_types import NO_MODULE
from sysprof.profiler_core.kernels import attribute_kernels
from sysprof.profiler_core.kernels.intervals import NO_RANGE, innermost_range, nesting_levels, outermost_range
from sysprof.profiler_core.kernels.module_attribution import label_modules
from sysprof.profiler_core.kernels.module_stats import ABSENT_NOTE, category_rows, module_summary
from sysprof.profiler_core.kernels.summary import analyze_attribution
from sysprof.profiler_core.kernels.torch_trace import attribute_torch_trace

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
MAIN, AUTOGRAD = 1, 2


def test_nesting_levels_and_lookups():
    # block [0, 100] holds attn [10, 50] holds proj [20, 30]; mlp [60, 90] in block; a crossing range [95, 120]
    starts, ends = np.array([0, 10, 20, 60, 95]), np.array([100, 50, 30, 90, 120])
    assert nesting_levels(starts, ends).tolist() == [0, 1, 2, 1, 1]
    times = np.array([5, 25, 40, 70, 97, 110, 130])
    assert innermost_range(times, starts, ends).tolist() == [0, 2, 1, 3, 4, 4, NO_RANGE]
    assert outermost_range(times, starts, ends).tolist() == [0, 0, 0, 0, 0, NO_RANGE, NO_RANGE]
    assert innermost_range(times, starts[:0], ends[:0]).tolist() == [NO_RANGE] * len(times)


def ranges_frame(rows: list[tuple[int, int, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["start", "end", "name", "global_tid"])


def kernels_frame(launches: list[tuple[int, int, str]], durations: int = 10) -> pd.DataFrame:
    """(api_start, launch_tid, phase) per kernel."""
    frame = pd.DataFrame(launches, columns=["api_start", "launch_tid", "phase"])
    frame["duration"], frame["step"] = durations, 0
    return frame


RANGES = ranges_frame([
    (0, 1000, "forward", MAIN),
    (0, 400, module_range("layers.0", "Block"), MAIN),
    (10, 200, module_range("layers.0.attn", "CausalSelfAttention"), MAIN),
    (20, 60, module_range("layers.0.attn.q_proj", "Linear"), MAIN),
    (70, 120, "softmax", MAIN),  # the user's own range inside attention
    (300, 390, module_range("layers.0.ffn", "SwiGLU"), MAIN),
    (500, 600, "my data step", MAIN),  # the user's range outside the model: no sub-row
    (2000, 2500, module_range("layers.0.attn", "CausalSelfAttention"), AUTOGRAD),
    (2100, 2200, module_range("layers.0.attn.q_proj", "Linear"), AUTOGRAD),
])


def test_kernels_take_the_innermost_module_on_their_launching_thread():
    kernels = kernels_frame([(30, MAIN, "forward"), (80, MAIN, "forward"), (350, MAIN, "forward"),
                             (550, MAIN, "forward"), (2150, AUTOGRAD, "backward"), (2300, AUTOGRAD, "backward"),
                             (2150, MAIN, "backward"), (-1, NO_RANGE, "other")])
    assert label_modules(kernels, RANGES) == 6
    assert kernels["module"].tolist() == ["layers.0.attn.q_proj", "layers.0.attn", "layers.0.ffn", "",
                                          "layers.0.attn.q_proj", "layers.0.attn", "", ""]
    assert kernels["module_category"].tolist() == ["attention", "attention", "mlp", NO_MODULE, "attention",
                                                   "attention", NO_MODULE, NO_MODULE]
    assert kernels["sub_range"].tolist() == ["", "softmax", "", "", "", "", "", ""]


def test_category_rows_split_each_phase_with_user_ranges_as_sub_rows():
    kernels = kernels_frame([(30, MAIN, "forward"), (80, MAIN, "forward"), (90, MAIN, "forward"),
                             (350, MAIN, "forward"), (2150, AUTOGRAD, "backward")])
    label_modules(kernels, RANGES)
    rows = [(r["phase"], r["category"], r["sub_range"], r["kernels"], r["share"]) for r in category_rows(kernels)]
    assert rows == [("forward", "attention", None, 3, 0.75), ("forward", "attention", "softmax", 2, 0.5),
                    ("forward", "mlp", None, 1, 0.25), ("backward", "attention", None, 1, 1.0)]


def test_a_real_export_without_module_ranges_has_an_empty_modules_section(h200_sqlite):
    attribution = attribute_kernels(h200_sqlite)
    assert attribution.module_ranges == 0
    assert set(attribution.kernels["module_category"]) == {NO_MODULE}
    assert set(attribution.kernels["sub_range"]) == {""}  # its attention ranges are sysprof's own, not the user's
    modules = analyze_attribution(attribution, str(h200_sqlite), "nsys-sqlite")["modules"]
    assert modules == {"ranges": 0, "rows": [], "top_modules": [], "notes": [ABSENT_NOTE]}


def test_a_real_torch_trace_without_module_ranges_has_an_empty_modules_section(tmp_path):
    path = tmp_path / "torch_trace.json"
    path.write_bytes(lzma.decompress((TRACES / "torch_trace_small_bf16.json.xz").read_bytes()))
    assert module_summary(attribute_torch_trace(path))["rows"] == []
