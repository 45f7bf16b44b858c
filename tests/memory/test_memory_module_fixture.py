"""Memory by module type on a real --nvtx-modules memory pass (the nanoGPT-style example, tiny dims, depth 3, made
on a GPU by benchmarks/kernels/make_module_fixtures.sh): tags on forward and backward allocations, a table per type, and
the categories unchanged."""
from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import pytest

from sysprof.profiler_core.base.module_types import NO_MODULE
from sysprof.profiler_core.memory import analyze_snapshot, load_snapshot
from sysprof.profiler_core.memory.replay import replay_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "module_ranges"
pytestmark = pytest.mark.skipif(not (DATA / "memory_snapshot.pickle.xz").is_file(),
                                reason="tests/data/module_ranges/ comes from a GPU "
                                       "(benchmarks/kernels/make_module_fixtures.sh)")


@pytest.fixture(scope="module")
def snapshot_path(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("module_memory")
    path = folder / "memory_snapshot.pickle"
    path.write_bytes(lzma.decompress((DATA / "memory_snapshot.pickle.xz").read_bytes()))
    shutil.copy(DATA / "modules.json", folder / "modules.json")  # as the memory pass leaves it
    return path


@pytest.fixture(scope="module")
def analysis(snapshot_path) -> dict:
    return analyze_snapshot(snapshot_path)


def test_allocations_of_forward_and_backward_carry_module_tags(snapshot_path):
    replay = replay_trace(load_snapshot(snapshot_path))
    assert replay.tags_recorded
    tagged_phases = {alloc.alloc_phase for alloc in replay.allocations if alloc.tag}
    assert {"forward", "backward"} <= tagged_phases  # the autograd thread's allocations too (one global tag)


def test_module_types_hold_memory_and_name_their_largest_allocation(analysis):
    modules = analysis["modules"]
    assert modules["tagged_allocations"] > 0
    assert modules["max_bytes"]["attention"] > 0 and modules["max_bytes"]["mlp"] > 0
    largest = {row["category"]: row for row in modules["largest"]}
    for category in ("attention", "mlp"):
        row = largest[category]
        assert row["size_bytes"] > 0 and row["phase"] in ("forward", "backward") and row["module"].startswith("blocks.")
    assert NO_MODULE in modules["at_peak_bytes"]


def test_the_module_grouping_covers_the_peak_and_leaves_the_categories_alone(analysis):
    assert sum(analysis["modules"]["at_peak_bytes"].values()) == analysis["peak_allocated_bytes"]
    assert sum(analysis["by_category"].values()) == analysis["peak_allocated_bytes"]
