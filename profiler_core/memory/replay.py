"""Replaying a snapshot's allocation trace into allocation lifetimes and an active-bytes timeline.

Decisions, checked against the real fixture (torch 2.11, H200):

- Bytes are the sizes the trace records. For `alloc` that is the *requested* size (trace entries show
  4-, 24- and 128-byte allocations, which the allocator would round to 512 B), so the timeline is the
  sum of live tensor sizes, and its peak is torch's `memory_stats()["requested_bytes.all.peak"]` (equal to
  the byte on four H100 snapshots). torch.cuda.max_memory_allocated counts allocator blocks and reads
  higher: `block_levels` replays the allocator's blocks (blocks.py; equal to allocated_bytes.all.peak on
  the same four), `rounded_levels` only rounds each request up to 512 B (a lower bound; real block sizes
  for the blocks alive before recording).
- A block stops counting at `free_completed` (or `free` in old traces), not `free_requested`: between
  the two, a block used on another stream is still owned by that stream and cannot be reused. On the
  fixture every free_requested is immediately followed by its free_completed, so both give one peak.
- Baseline = memory allocated before recording started: (a) blocks `active` in `segments` at dump time
  whose address has no `alloc` left open in the trace, and (b) blocks freed in the trace without an
  earlier `alloc` (allocated before recording, or lost when the max_entries ring buffer wrapped).
  On the fixture all 337 active blocks are (a) — parameters, AdamW state, cuBLAS workspaces — and every
  traced alloc is freed again within the two recorded steps.
- Reserved bytes: the segments' total at dump time, walked back through segment_alloc / segment_free /
  segment_map / segment_unmap events (the fixture has none: every segment existed from warm-up).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .blocks import FREE_DONE_ACTIONS, SEGMENT_GROW, SEGMENT_SHRINK, replay_blocks, rounded
from .frames import EMPTY_STACK, StackCache, StackSummary
from .phases import BEFORE_RECORDING, PhaseMark, assign_phases, has_loop_phases

ACTIVE_BLOCK_STATES = {"active_allocated", "active_pending_free"}


@dataclass(slots=True)
class Allocation:
    address: int
    size: int  # requested bytes
    alloc_index: int  # event index of the alloc; -1 when allocated before recording
    free_index: int | None  # event index of the completed free; None when alive at the end
    alloc_phase: str
    free_phase: str | None
    alloc_step: int | None
    free_step: int | None
    stack: StackSummary = field(default=EMPTY_STACK)  # where it was allocated
    free_stack: StackSummary = field(default=EMPTY_STACK)
    block_size: int | None = None  # allocator block size when known (baseline blocks)
    tag: str = ""  # allocator metadata at the alloc: the innermost module's range name with --nvtx-modules

    @property
    def from_baseline(self) -> bool:
        return self.alloc_index < 0

    def alive_after(self, event_index: int) -> bool:
        """Whether it holds memory right after event `event_index` (-1: before the first event)."""
        freed_later = self.free_index is None or self.free_index > event_index
        return self.alloc_index <= event_index and freed_later


@dataclass(slots=True)
class Replay:
    allocations: list[Allocation]
    levels: np.ndarray  # active bytes after each event (int64)
    rounded_levels: np.ndarray  # same, each request rounded up to 512 B (a lower bound of allocated_bytes)
    reserved_levels: np.ndarray  # reserved bytes after each event
    baseline_bytes: int
    rounded_baseline_bytes: int
    reserved_baseline_bytes: int
    device: int
    times_us: list[int | None]
    phases: list[str]
    steps: list[int]
    marks: list[PhaseMark]
    notes: list[str]
    tags_recorded: bool = False  # whether the trace's entries carry allocator metadata at all (newer torch)
    # Allocator blocks after each event (blocks.py): what torch.cuda.max_memory_allocated counts. None: built by hand
    block_levels: np.ndarray | None = None
    block_baseline_bytes: int = 0
    phases_from_loop: bool = False  # a traced loop's own phase ranges gave the phases (phases.py)
    blocks_replayed: bool = False  # False: some or all requests count rounded up to 512 B (blocks_note says why)
    blocks_note: str | None = None

    @property
    def peak_index(self) -> int:
        """Event after which active bytes peak; -1 when the baseline itself is the peak."""
        if len(self.levels) == 0 or int(self.levels.max()) <= self.baseline_bytes:
            return -1
        return int(self.levels.argmax())

    @property
    def peak_bytes(self) -> int:
        return int(self.levels[self.peak_index]) if self.peak_index >= 0 else self.baseline_bytes

    @property
    def peak_rounded_bytes(self) -> int:
        """The 512-B-rounded level at the same moment as the peak (not the rounded series' own max)."""
        return int(self.rounded_levels[self.peak_index]) if self.peak_index >= 0 else self.rounded_baseline_bytes

    def _blocks(self) -> tuple[np.ndarray, int]:
        if self.block_levels is None:
            return self.rounded_levels, self.rounded_baseline_bytes
        return self.block_levels, self.block_baseline_bytes

    @property
    def block_peak_index(self) -> int:
        """Event after which allocator blocks peak (-1: the baseline); it may differ from the requested peak's."""
        levels, baseline = self._blocks()
        if len(levels) == 0 or int(levels.max()) <= baseline:
            return -1
        return int(levels.argmax())

    def block_bytes_at(self, event_index: int) -> int:
        """Allocator block bytes right after `event_index` (-1: before the first event)."""
        levels, baseline = self._blocks()
        return int(levels[event_index]) if event_index >= 0 else baseline

    def alive_at(self, event_index: int) -> list[Allocation]:
        return [alloc for alloc in self.allocations if alloc.alive_after(event_index)]


def pick_device(snapshot: dict) -> int:
    """The device with the most trace events (ties: most segment bytes)."""
    traces = snapshot.get("device_traces") or []
    if not traces:
        devices = [segment.get("device", 0) for segment in snapshot.get("segments", [])]
        return max(set(devices), key=devices.count) if devices else 0
    return max(range(len(traces)), key=lambda device: len(traces[device]))


def _walk_trace(trace: list[dict], stacks: StackCache, phases: list[str], steps: list[int]):
    """Allocations seen in the trace, byte deltas per event, and the blocks still open at the end."""
    open_by_address: dict[int, Allocation] = {}
    closed: list[Allocation] = []
    deltas = np.zeros(len(trace), dtype=np.int64)
    rounded_deltas = np.zeros(len(trace), dtype=np.int64)
    segment_deltas = np.zeros(len(trace), dtype=np.int64)
    for index, event in enumerate(trace):
        action, size = event.get("action"), int(event.get("size", 0))
        if action == "alloc":
            address = int(event.get("addr", -1))  # alloc and free entries name their block; a torn one reads -1
            open_by_address[address] = Allocation(address, size, index, None, phases[index], None, steps[index],
                                                  None, stacks.summary(event.get("frames")),
                                                  tag=event.get("user_metadata") or "")
            deltas[index], rounded_deltas[index] = size, rounded(size)
        elif action in FREE_DONE_ACTIONS:
            address = int(event.get("addr", -1))
            alloc = open_by_address.pop(address, None) or Allocation(
                address, size, -1, None, BEFORE_RECORDING, None, None, None)
            alloc.free_index, alloc.free_phase, alloc.free_step = index, phases[index], steps[index]
            alloc.free_stack = stacks.summary(event.get("frames"))
            closed.append(alloc)
            deltas[index], rounded_deltas[index] = -alloc.size, -rounded(alloc.size)
        elif action in SEGMENT_GROW or action in SEGMENT_SHRINK:
            segment_deltas[index] = size if action in SEGMENT_GROW else -size
    return closed, open_by_address, deltas, rounded_deltas, segment_deltas


def _baseline_blocks(segments: list[dict], open_at_end: dict[int, Allocation]) -> list[Allocation]:
    baseline = []
    for segment in segments:
        for block in segment.get("blocks", []):
            if block.get("state") in ACTIVE_BLOCK_STATES and block.get("address") not in open_at_end:
                size = int(block.get("requested_size") or block.get("size", 0))
                baseline.append(Allocation(block.get("address"), size, -1, None, BEFORE_RECORDING, None, None,
                                           None, block_size=int(block.get("size", size))))
    return baseline


def replay_trace(snapshot: dict, device: int | None = None) -> Replay:
    """Replay one device's trace (default: the busiest device) into lifetimes and levels."""
    device = pick_device(snapshot) if device is None else device
    traces = snapshot.get("device_traces") or []
    trace = traces[device] if device < len(traces) else []
    segments = [segment for segment in snapshot.get("segments", []) if segment.get("device", 0) == device]
    stacks = StackCache()
    phases, steps, marks = assign_phases(trace, stacks, snapshot.get("external_annotations"))
    closed, open_at_end, deltas, rounded_deltas, segment_deltas = _walk_trace(trace, stacks, phases, steps)
    baseline_at_end = _baseline_blocks(segments, open_at_end)
    freed_baseline = [alloc for alloc in closed if alloc.from_baseline]
    baseline_bytes = sum(a.size for a in baseline_at_end) + sum(a.size for a in freed_baseline)
    # _baseline_blocks gives every block it finds its allocator block size.
    rounded_baseline = sum(a.block_size or 0 for a in baseline_at_end) + sum(rounded(a.size) for a in freed_baseline)
    reserved_end = sum(int(segment.get("total_size", 0)) for segment in segments)
    reserved_baseline = reserved_end - int(segment_deltas.sum())
    notes = _consistency_notes(freed_baseline, open_at_end, segments)
    in_use_at_start = {a.address: a.block_size or rounded(a.size) for a in baseline_at_end + freed_baseline}
    blocks = replay_blocks(snapshot, trace, segments, in_use_at_start)
    block_baseline = sum(in_use_at_start.values())
    return Replay(
        allocations=baseline_at_end + closed + list(open_at_end.values()),
        levels=baseline_bytes + np.cumsum(deltas),
        rounded_levels=rounded_baseline + np.cumsum(rounded_deltas),
        reserved_levels=reserved_baseline + np.cumsum(segment_deltas),
        baseline_bytes=baseline_bytes,
        rounded_baseline_bytes=rounded_baseline,
        reserved_baseline_bytes=reserved_baseline,
        device=device,
        times_us=[event.get("time_us") for event in trace],
        phases=phases, steps=steps, marks=marks, notes=notes,
        phases_from_loop=has_loop_phases(snapshot.get("external_annotations")),
        tags_recorded=any("user_metadata" in event for event in trace[:1]),
        block_levels=block_baseline + np.cumsum(blocks.deltas),
        block_baseline_bytes=block_baseline,
        blocks_replayed=blocks.replayed,
        blocks_note=blocks.reason,
    )


def _consistency_notes(freed_baseline: list[Allocation], open_at_end: dict, segments: list[dict]) -> list[str]:
    notes = []
    if freed_baseline:
        notes.append(f"{len(freed_baseline)} blocks were freed in the trace without a recorded alloc "
                     "(allocated before recording, or the max_entries ring buffer wrapped); counted as baseline.")
    active = {b.get("address") for s in segments for b in s.get("blocks", []) if b.get("state") in ACTIVE_BLOCK_STATES}
    missing = [address for address in open_at_end if address not in active]
    if missing:
        notes.append(f"{len(missing)} allocations open at the end of the trace are not active in 'segments' "
                     "(trace and segment dump disagree); they are kept as alive.")
    return notes
