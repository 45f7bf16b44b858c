"""Kernels by module type on real --nvtx-modules output (the nanoGPT-style example, tiny dims, depth 3, made on a
GPU by benchmarks/kernels/make_module_fixtures.sh): both threads' module ranges, module types that add up to each phase,
the example's own NVTX range as a sub-row, and the torch.profiler trace of the same run."""
from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from sysprof.profiler_core.base.module_types import NO_MODULE
from sysprof.profiler_core.kernels import analyze_sqlite, attribute_kernels
from sysprof.profiler_core.kernels.summary import analyze_attribution
from sysprof.profiler_core.kernels.torch_trace import attribute_torch_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "module_ranges"
pytestmark = pytest.mark.skipif(not (DATA / "profile.sqlite.xz").is_file(),
                                reason="tests/data/module_ranges/ comes from a GPU "
                                       "(benchmarks/kernels/make_module_fixtures.sh)")
USER_RANGE = "up projection and gelu"  # tests/data/models/nanogpt_style/blocks.py


def unpacked(name: str, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("module_ranges") / name.removesuffix(".xz")
    path.write_bytes(lzma.decompress((DATA / name).read_bytes()))
    return path


@pytest.fixture(scope="module")
def sqlite(tmp_path_factory) -> Path:
    return unpacked("profile.sqlite.xz", tmp_path_factory)


@pytest.fixture(scope="module")
def attribution(sqlite):
    return attribute_kernels(sqlite)


@pytest.fixture(scope="module")
def analysis(attribution, sqlite) -> dict:
    return analyze_attribution(attribution, str(sqlite), "nsys-sqlite")


@pytest.fixture(scope="module")
def modules_json() -> dict:
    return json.loads((DATA / "modules.json").read_text())["modules"]


def categories(analysis: dict, phase: str) -> dict[str, dict]:
    return {r["category"]: r for r in analysis["modules"]["rows"] if r["phase"] == phase and r["sub_range"] is None}


def test_forward_and_backward_kernels_find_their_modules_on_their_own_threads(attribution):
    kernels = attribution.kernels
    assert attribution.module_ranges > 0
    for phase in ("forward", "backward"):
        in_phase = kernels[kernels["phase"] == phase]
        assert (in_phase["module"] != "").mean() > 0.5, phase
    backward = kernels[(kernels["phase"] == "backward") & (kernels["module"] != "")]
    assert (backward["launch_tid"] != attribution.main_tid).mean() > 0.9  # the autograd thread's own ranges


def test_module_types_add_up_to_each_phase(analysis):
    for phase in ("forward", "backward", "optimizer"):
        rows = categories(analysis, phase)
        assert sum(r["gpu_ns"] for r in rows.values()) == analysis["phases"][phase]["gpu_ns"], phase
        assert sum(r["share"] for r in rows.values()) == pytest.approx(1.0, abs=1e-3)
    for phase in ("forward", "backward"):
        assert {"attention", "mlp", "norm", "embedding", "head"} <= set(categories(analysis, phase)), phase
    assert set(categories(analysis, "optimizer")) == {NO_MODULE}


def test_the_examples_own_range_is_a_sub_row_of_mlp(analysis):
    subs = [r for r in analysis["modules"]["rows"] if r["sub_range"] == USER_RANGE]
    assert subs and {(r["phase"], r["category"]) for r in subs} == {("forward", "mlp")}
    assert 0 < subs[0]["gpu_ns"] < categories(analysis, "forward")["mlp"]["gpu_ns"]


def test_kernel_module_types_agree_with_the_runners_modules_json(attribution, modules_json):
    labelled = attribution.kernels.drop_duplicates("module")
    for module, category in zip(labelled["module"], labelled["module_category"]):
        if module:
            assert modules_json[module]["category"] == category, module


def test_top_modules_are_hooked_modules(analysis, modules_json):
    top = analysis["modules"]["top_modules"]
    assert top and {row["module"] for row in top} <= set(modules_json)
    assert any(row["category"] == "attention" and row["backward_ns"] > 0 for row in top)


def test_analyze_sqlite_carries_the_modules_section(sqlite):
    assert analyze_sqlite(sqlite)["modules"]["ranges"] > 0


def test_torch_trace_of_the_same_run(tmp_path_factory):
    trace = unpacked("torch_trace.json.xz", tmp_path_factory)
    analysis = analyze_attribution(attribute_torch_trace(trace), str(trace), "torch")
    assert {"attention", "mlp"} <= set(categories(analysis, "forward"))
    # Whether torch.profiler keeps the autograd thread's record_function ranges decides the backward rows;
    # without them the section says so instead of showing a backward of "no module" alone.
    backward = set(categories(analysis, "backward"))
    assert {"attention", "mlp"} <= backward or any("autograd thread" in n for n in analysis["modules"]["notes"])
