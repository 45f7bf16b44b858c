"""One call from a snapshot file to the JSON document `sysprof analyze SNAPSHOT --json` prints.

Contract keys (DESIGN.md §2; never rename): peak_allocated_bytes, top_allocations, by_category.
Added here: the peak's moment, max_by_category, largest_by_category, a timeline, and `modules` (memory by module type
with --nvtx-modules; modules.py).
All byte counts are requested tensor sizes unless the key says `rounded` or `block` (see replay.py). Which torch counter
each peak is: `peak_allocated_bytes` (requested sizes) is torch.cuda.memory_stats()["requested_bytes.all.peak"];
`allocator_peak.allocated_bytes` (allocator blocks, replayed in blocks.py) is torch.cuda.max_memory_allocated(), both
over the recorded span (equal to the byte on four H100 snapshots, replay.py). `peak_allocated_rounded_bytes` only rounds
each request up to 512 B, a lower bound of the blocks.
"""

from __future__ import annotations

import os

from .categories import bytes_by_category, classify_allocations, max_by_category
from .modules import module_memory, module_types_beside
from .phases import BEFORE_RECORDING, STEP_OPENERS, step_words
from .replay import Allocation, Replay, replay_trace
from .snapshot import load_snapshot
from .timeline import DEFAULT_MAX_POINTS, downsample_timeline


def _hinted_t2_sizes(shape_hint: dict | None) -> set[int]:
    """B·H·T²·bytes from {"batch", "heads", "ctx", "bytes_per_element"} (any missing → no hint)."""
    if not shape_hint:
        return set()
    try:
        return {int(shape_hint["batch"]) * int(shape_hint["heads"]) * int(shape_hint["ctx"]) ** 2
                * int(shape_hint.get("bytes_per_element", 4))}
    except (KeyError, TypeError, ValueError):
        return set()


def _origin_us(replay: Replay) -> int | None:
    return replay.times_us[0] if replay.times_us and replay.times_us[0] is not None else None


def _t_ms(replay: Replay, event_index: int) -> float | None:
    origin = _origin_us(replay)
    if event_index < 0 or origin is None:
        return None
    time_us = replay.times_us[event_index]
    return None if time_us is None else round((time_us - origin) / 1000.0, 4)


def _allocation_row(alloc: Allocation, category: str, replay: Replay) -> dict:
    return {
        "size_bytes": alloc.size,
        "phase": alloc.alloc_phase,
        "step": alloc.alloc_step,
        "category": category,
        "frame": alloc.stack.telling_frame,
        "op": alloc.stack.op,
        "address": alloc.address,
        "allocated_at_ms": _t_ms(replay, alloc.alloc_index),
        "freed_at_ms": None if alloc.free_index is None else _t_ms(replay, alloc.free_index),
        "freed_in_phase": alloc.free_phase,
    }


REQUESTED_PEAK_COUNTER = 'torch.cuda.memory_stats()["requested_bytes.all.peak"]'
BLOCK_PEAK_COUNTER = "torch.cuda.max_memory_allocated()"


def _moment(replay: Replay, index: int) -> dict:
    """When event `index` happened: phase, recorded step (counted from 0), ms since the first event."""
    return {
        "event_index": index,
        "phase": replay.phases[index] if index >= 0 else BEFORE_RECORDING,
        "step": replay.steps[index] if index >= 0 else None,
        "t_ms": _t_ms(replay, index),
    }


def _recorded_steps(replay: Replay) -> int | None:
    """How many steps the recording holds (a step begins where forward follows backward or optimizer); None when no
    event's phase is known."""
    return max(replay.steps) + 1 if replay.marks and replay.steps else None


def _peak_summary(replay: Replay) -> dict:
    return _moment(replay, replay.peak_index) | {
        "recorded_steps": _recorded_steps(replay),
        # the recording began inside a step: its first phase opens none (forward, or a traced loop's data), so step
        # 0 is that step's tail
        "first_step_partial": bool(replay.marks) and replay.marks[0].phase not in STEP_OPENERS,
        "counter": REQUESTED_PEAK_COUNTER,
    }


def _allocator_peak(replay: Replay) -> dict:
    """The peak of allocator blocks (it may fall at another event than the requested peak) and when."""
    index = replay.block_peak_index
    return _moment(replay, index) | {
        "allocated_bytes": replay.block_bytes_at(index),
        "replayed": replay.blocks_replayed,  # False: a lower bound, some requests only rounded (`note` says why)
        "note": replay.blocks_note,
        "counter": BLOCK_PEAK_COUNTER,
    }


def _timeline(replay: Replay, max_points: int) -> dict:
    timeline = downsample_timeline(replay.times_us, replay.levels, replay.baseline_bytes, max_points)
    origin = _origin_us(replay) if timeline["t_unit"] == "ms" else None
    timeline["phase_marks"] = [mark.as_dict(origin) for mark in replay.marks]
    return timeline


def _peak_reserved(replay: Replay) -> int | None:
    """Highest reserved bytes; None when the snapshot lists no segments (nothing to derive it from)."""
    top = max([replay.reserved_baseline_bytes, *replay.reserved_levels.tolist()])
    return int(top) if top > 0 else None


def _blocks_caveat(replay: Replay) -> str:
    return "" if replay.blocks_replayed else f" (a lower bound here: {replay.blocks_note})"


def _phases_from(replay: Replay) -> str:
    if replay.phases_from_loop:
        return "phases are the traced loop's own (its sysprof.phase ranges in the recorded history)"
    return "phases are inferred from stack frames and Optimizer.* annotations, not NVTX"


def _notes(replay: Replay, facts: dict, peak: dict) -> list[str]:
    notes = [f"Bytes are requested tensor sizes from the trace: peak_allocated_bytes is {REQUESTED_PEAK_COUNTER}. "
             f"{BLOCK_PEAK_COUNTER} counts allocator blocks (requests rounded up to 512 B, some given a whole free "
             "block) and reads higher: allocator_peak.allocated_bytes"
             + _blocks_caveat(replay) + ".",
             f"Peak in {step_words(peak, peak['recorded_steps'])} (peak.step {peak['step']}, event "
             f"{peak['event_index']}); {_phases_from(replay)}."]
    if facts["optimizer"]:
        notes.append(f"Optimizer '{facts['optimizer']}' seen in the trace: blocks alive since before recording are "
                     f"split assuming {facts['states_per_parameter']} state tensor(s) per parameter, by size class.")
    if facts["attention_score_sizes"]:
        notes.append(f"T²-sized (attention score) tensor sizes: {facts['attention_score_sizes']} bytes; a block of "
                     "that size counts as attention scores only when a score op made it.")
    return notes + replay.notes


def _largest_by_category(replay: Replay, categories: list[str]) -> dict[str, dict]:
    """The largest single allocation of each category over the whole trace (a block made before recording
    started counts too), with where and when it was made."""
    largest: dict[str, int] = {}
    for index, (alloc, category) in enumerate(zip(replay.allocations, categories)):
        if category not in largest or alloc.size > replay.allocations[largest[category]].size:
            largest[category] = index
    return {category: _allocation_row(replay.allocations[index], category, replay)
            for category, index in largest.items()}


def analyze_snapshot(path_or_loaded: str | os.PathLike | dict, top_n: int = 20, *, device: int | None = None,
                     shape_hint: dict | None = None, max_points: int = DEFAULT_MAX_POINTS,
                     module_types: dict[str, str] | None = None) -> dict:
    """Peak, what is alive at the peak (by category and largest blocks), and a plottable timeline.

    module_types (module path → class name) default to the modules.json beside a snapshot file, if any.
    """
    snapshot = path_or_loaded if isinstance(path_or_loaded, dict) else load_snapshot(path_or_loaded)
    if module_types is None:
        module_types = {} if isinstance(path_or_loaded, dict) else module_types_beside(path_or_loaded)
    replay = replay_trace(snapshot, device)
    categories, facts = classify_allocations(replay, _hinted_t2_sizes(shape_hint))
    peak = _peak_summary(replay)
    peak_index = peak["event_index"]  # a computed property: read once, not per allocation
    alive = [i for i, alloc in enumerate(replay.allocations) if alloc.alive_after(peak_index)]
    alive.sort(key=lambda i: (-replay.allocations[i].size, replay.allocations[i].alloc_index))
    return {
        "source": str(path_or_loaded) if not isinstance(path_or_loaded, dict) else None,
        "peak_allocated_bytes": replay.peak_bytes,
        "peak_allocated_rounded_bytes": replay.peak_rounded_bytes,
        "peak_allocated_block_bytes": replay.block_bytes_at(peak["event_index"]),  # allocator blocks, same moment
        "allocator_peak": _allocator_peak(replay),
        "peak_reserved_bytes": _peak_reserved(replay),
        "baseline_bytes": replay.baseline_bytes,
        "peak": peak,
        "top_allocations": [_allocation_row(replay.allocations[i], categories[i], replay) for i in alive[:top_n]],
        "by_category": bytes_by_category([replay.allocations[i] for i in alive], [categories[i] for i in alive]),
        "max_by_category": max_by_category(replay, categories),
        "largest_by_category": _largest_by_category(replay, categories),
        "timeline": _timeline(replay, max_points),
        "n_events": len(replay.levels),
        "n_allocations": len(replay.allocations),
        "device": replay.device,
        "attention_score_sizes": facts["attention_score_sizes"],
        "optimizer": facts["optimizer"],
        "modules": module_memory(replay, peak_index, module_types),
        "notes": _notes(replay, facts, peak),
    }
