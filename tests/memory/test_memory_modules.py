"""Memory by module type: the labelling rule on hand-made allocations, and the real H200 snapshot, which was recorded
without --nvtx-modules (its trace carries empty metadata: a note, no rows; the categories are untouched)."""
from __future__ import annotations

import copy
import json

from sysprof.models.phases import module_range
from sysprof.profiler_core.base.module_types import NO_MODULE
from sysprof.profiler_core.memory import analyze_snapshot
from sysprof.profiler_core.memory.modules import (
    NO_METADATA,
    UNTAGGED,
    largest_per_type,
    module_labels,
    module_types_beside,
)
from sysprof.profiler_core.memory.replay import Allocation


def allocation(size: int, tag: str = "", alloc_index: int = 0) -> Allocation:
    return Allocation(0, size, alloc_index, None, "forward", None, 0, None, tag=tag)


def test_tags_become_module_types_through_their_parents():
    allocations = [allocation(10, module_range("blocks.0.attn.in_proj", "Linear")),
                   allocation(20, module_range("blocks.0.mlp.fc", "Linear")),
                   allocation(30, module_range("blocks.0", "Block")),
                   allocation(40), allocation(50, alloc_index=-1)]
    labels = module_labels(allocations, {"blocks.0.mlp": "MLP"})
    assert labels == ["attention", "mlp", "other", NO_MODULE, NO_MODULE]
    largest = largest_per_type(allocations, labels)
    assert [(row["category"], row["size_bytes"], row["module"]) for row in largest] == [
        ("attention", 10, "blocks.0.attn.in_proj"), ("mlp", 20, "blocks.0.mlp.fc"), ("other", 30, "blocks.0"),
        (NO_MODULE, 40, None)]  # the 50-byte block predates the recording


def test_the_real_snapshot_without_tags_says_how_to_get_them(analysis):
    assert analysis["modules"] == {"notes": [UNTAGGED]}


def test_a_torch_without_allocation_metadata_is_named(snapshot):
    older = copy.deepcopy(snapshot)  # the same snapshot as a torch before allocation metadata would write it
    for trace in older["device_traces"]:
        for entry in trace:
            entry.pop("user_metadata", None)
    result = analyze_snapshot(older)
    assert result["modules"] == {"notes": [NO_METADATA]}
    assert result["by_category"] == analyze_snapshot(snapshot)["by_category"]


def test_modules_json_beside_the_snapshot_gives_class_names(tmp_path):
    (tmp_path / "modules.json").write_text(json.dumps({"depth": 2, "modules": {"blocks.0": {"type": "Block"}}}))
    assert module_types_beside(tmp_path / "memory_snapshot.pickle") == {"blocks.0": "Block"}
    (tmp_path / "modules.json").write_text("{torn")
    assert module_types_beside(tmp_path / "memory_snapshot.pickle") == {}
    assert module_types_beside(tmp_path / "elsewhere" / "memory_snapshot.pickle") == {}


def test_the_terminal_table_names_a_backward_allocation_by_its_module():
    from rich.console import Console

    from sysprof.profiler_core.render.module_tables import print_module_tables

    largest = [{"category": "embedding", "size_bytes": 5 << 20, "phase": "backward", "step": 0, "frame": None,
                "module": "wte"}]
    analysis = {"modules": {"at_peak_bytes": {"embedding": 0}, "max_bytes": {"embedding": 10 << 20},
                            "largest": largest}}
    console = Console(width=100, record=True)
    print_module_tables(console, analysis, "memory")
    lines = console.export_text().splitlines()
    assert any(line.split()[:1] == ["embedding"] and " wte " in f"{line} " for line in lines)
