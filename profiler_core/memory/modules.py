"""Memory by module type (`--nvtx-modules` with `--memory`): the memory pass tags every allocation with the range
name of the innermost module running (torch.cuda.memory._set_memory_metadata); the snapshot keeps that text per
trace entry as `user_metadata`. A tag's module type is that of the deepest module on its path that has one
(profiler_core.base.module_types), with class names from the tags themselves and the pass's modules.json.

An extra grouping beside the categories (parameters, activations, …), which it leaves untouched. Allocations made
before recording (the weights, the optimizer's state) or outside every module (the loss, the optimizer step) carry
no tag and count as "no module"; the table of largest allocations lists only those made while recording.
"""
from __future__ import annotations

import os
from pathlib import Path

from sysprof.models.phases import parse_module_range
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import RunDirError
from sysprof.profiler_core.base.module_types import CATEGORIES, NO_MODULE, module_category

from .categories import bytes_by_category, max_by_category
from .replay import Allocation, Replay

MODULE_CATEGORIES = (*CATEGORIES, NO_MODULE)
NO_METADATA = "this snapshot's torch records no allocation metadata: no memory by module type"
UNTAGGED = "no allocation carries a module tag: run with --nvtx-modules N and --memory"


def module_types_beside(snapshot: str | os.PathLike) -> dict[str, str]:
    """path → class name from the modules.json the memory pass wrote beside its snapshot (empty when absent)."""
    try:
        document = rundir.read_json(Path(snapshot).parent / rundir.MODULES) or {}
    except RunDirError:
        return {}
    return {path: str(entry.get("type", "")) for path, entry in (document.get("modules") or {}).items()}


def module_labels(allocations: list[Allocation], types: dict[str, str]) -> list[str]:
    """The module type of every allocation, from its tag; NO_MODULE for untagged ones."""
    parsed = {tag: parse_module_range(tag) for tag in {alloc.tag for alloc in allocations}}
    known = {**dict(module for module in parsed.values() if module), **types}
    label = {tag: module_category(module[0], known) if module else NO_MODULE for tag, module in parsed.items()}
    return [label[alloc.tag] for alloc in allocations]


def module_memory(replay: Replay, peak_index: int, types: dict[str, str]) -> dict:
    """{"tagged_allocations", "at_peak_bytes", "max_bytes" (per module type), "largest": [...], "notes"}; only
    notes when the snapshot has no tags."""
    if not replay.tags_recorded:
        return {"notes": [NO_METADATA]}
    tagged = sum(1 for alloc in replay.allocations if alloc.tag)
    if not tagged:
        return {"notes": [UNTAGGED]}
    labels = module_labels(replay.allocations, types)
    alive = [i for i, alloc in enumerate(replay.allocations) if alloc.alive_after(peak_index)]
    return {
        "tagged_allocations": tagged,
        "at_peak_bytes": bytes_by_category([replay.allocations[i] for i in alive], [labels[i] for i in alive],
                                           MODULE_CATEGORIES),
        "max_bytes": max_by_category(replay, labels, MODULE_CATEGORIES),
        "largest": largest_per_type(replay.allocations, labels),
        "notes": ["allocations take the innermost module running when they were made (backward: the module whose "
                  "backward ran); weights and optimizer state predate the recording and count as 'no module'"],
    }


def largest_per_type(allocations: list[Allocation], labels: list[str]) -> list[dict]:
    """The largest allocation made while recording, per module type, in MODULE_CATEGORIES order."""
    largest: dict[str, Allocation] = {}
    for alloc, label in zip(allocations, labels):
        if not alloc.from_baseline and (label not in largest or alloc.size > largest[label].size):
            largest[label] = alloc
    rows = []
    for label in (name for name in MODULE_CATEGORIES if name in largest):
        alloc = largest[label]
        module = parse_module_range(alloc.tag)
        rows.append({"category": label, "size_bytes": alloc.size, "phase": alloc.alloc_phase, "step": alloc.alloc_step,
                     "frame": alloc.stack.telling_frame, "module": module[0] if module else None})
    return rows
