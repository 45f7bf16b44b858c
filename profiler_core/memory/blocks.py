"""The allocator's block for every traced allocation: the bytes torch.cuda.max_memory_allocated counts.

The trace records *requested* sizes, and its peak is torch's `memory_stats()["requested_bytes.all.peak"]`.
max_memory_allocated (`allocated_bytes.all.peak`) counts the caching allocator's blocks instead: a request is
rounded up to 512 B, and the block it gets from a free stretch of a segment is split off only when enough is left
over (at least 512 B in the small pool; more than 1 MiB in the large pool, and only below max_split_size).
Otherwise the request gets the whole stretch: a 39.06 MiB request in a fresh 40 MiB segment holds all 40 MiB.

The trace names every block's address, so the allocator's choice can be replayed: the free stretch an allocation
starts is the one that reaches from its address to the next block in use (free neighbours are always merged) or the
segment's end. Segments come from the dump, walked back through segment_alloc / segment_free events. Checked against
torch 2.11 on an H100: the replayed peak equals allocated_bytes.all.peak exactly for two warm train steps (small and
medium, fp32), two cold bf16 steps (optimizer state made during recording, 114 new segments) and 2,175 random sizes
from 1 B to 64 MiB.

Not replayed (block sizes fall back to the 512-B rounding, a lower bound): expandable segments, round-up power-of-2
divisions (PYTORCH_CUDA_ALLOC_CONF roundup_power2_divisions), and snapshots whose trace and segments disagree.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

MIN_BLOCK_BYTES = 512  # kMinBlockSize: every block is a multiple of it
SMALL_REQUEST_BYTES = 1 << 20  # kSmallSize: rounded requests up to this come from the small pool

SEGMENT_GROW = {"segment_alloc", "segment_map"}
SEGMENT_SHRINK = {"segment_free", "segment_unmap"}
FREE_DONE_ACTIONS = {"free_completed", "free"}


def rounded(size: int) -> int:
    """The allocator's request size: at least 512 B, a multiple of 512 B (without round-up divisions)."""
    return max(MIN_BLOCK_BYTES, -(-size // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES)


@dataclass(slots=True)
class BlockReplay:
    deltas: np.ndarray  # block bytes allocated (+) or freed (−) by each event
    replayed: bool  # False: some or all requests count rounded up to 512 B only (a lower bound), `reason` says why
    reason: str | None = None


def unsupported_settings(snapshot: dict, trace: list[dict]) -> str | None:
    """Why the allocator's choices cannot be replayed for this snapshot, or None."""
    settings = snapshot.get("allocator_settings") or {}
    if settings.get("expandable_segments") or any(event.get("action") in ("segment_map", "segment_unmap")
                                                  for event in trace):
        return "expandable segments are not replayed"
    divisions = settings.get("roundup_power2_divisions") or {}
    values = divisions.values() if isinstance(divisions, dict) else divisions
    if any(int(value or 0) > 1 for value in values):
        return "roundup_power2_divisions are not replayed"
    return None


def _max_split_bytes(snapshot: dict) -> int | None:
    value = (snapshot.get("allocator_settings") or {}).get("max_split_size")
    return int(value) if isinstance(value, int) and value > 0 else None  # -1: SIZE_MAX, no limit


def _segments_at_start(segments: list[dict], trace: list[dict]) -> dict[int, int]:
    """Segment address → size when recording began: the dump's segments with the trace's segment events undone."""
    present = {int(segment["address"]): int(segment.get("total_size", 0)) for segment in segments
               if segment.get("address") is not None}
    for event in reversed(trace):
        action = event.get("action")
        if action in SEGMENT_GROW:
            present.pop(int(event.get("addr", -1)), None)
        elif action in SEGMENT_SHRINK:
            present[int(event.get("addr", -1))] = int(event.get("size", 0))
    return present


class _Memory:
    """Segments and the blocks in use, by address, as the allocator sees them."""

    def __init__(self, segments: dict[int, int], in_use: dict[int, int], max_split: int | None):
        self.segment_starts = sorted(segments)
        self.segment_size = dict(segments)
        self.in_use = dict(in_use)
        self.in_use_starts = sorted(in_use)
        self.max_split = max_split
        self.mismatches = 0

    def add_segment(self, address: int, size: int) -> None:
        if address not in self.segment_size:
            bisect.insort(self.segment_starts, address)
        self.segment_size[address] = size

    def drop_segment(self, address: int) -> None:
        if self.segment_size.pop(address, None) is not None:
            self.segment_starts.remove(address)

    def _free_stretch(self, address: int) -> int | None:
        """Bytes from `address` to the next block in use or the end of its segment; None outside every segment."""
        position = bisect.bisect_right(self.segment_starts, address) - 1
        if position < 0:
            return None
        start = self.segment_starts[position]
        end = start + self.segment_size[start]
        if address >= end:
            return None
        following = bisect.bisect_right(self.in_use_starts, address)
        if following < len(self.in_use_starts):
            end = min(end, self.in_use_starts[following])
        return end - address

    def allocate(self, address: int, size: int) -> int:
        request = rounded(size)
        stretch = self._free_stretch(address)
        if stretch is None or stretch < request:
            self.mismatches += 1
            block = request
        else:
            remaining = stretch - request
            if request <= SMALL_REQUEST_BYTES:
                split = remaining >= MIN_BLOCK_BYTES
            else:
                split = (self.max_split is None or request < self.max_split) and remaining > SMALL_REQUEST_BYTES
            block = request if split else stretch
        if address not in self.in_use:
            bisect.insort(self.in_use_starts, address)
        self.in_use[address] = block
        return block

    def free(self, address: int, size: int) -> int:
        block = self.in_use.pop(address, None)
        if block is None:
            self.mismatches += 1
            return rounded(size)
        self.in_use_starts.pop(bisect.bisect_left(self.in_use_starts, address))
        return block


def replay_blocks(snapshot: dict, trace: list[dict], segments: list[dict],
                  in_use_at_start: dict[int, int]) -> BlockReplay:
    """Block bytes per event. in_use_at_start: address → block bytes of the blocks allocated before recording."""
    reason = unsupported_settings(snapshot, trace)
    if reason is None and not segments and trace:
        reason = "the snapshot lists no segments to replay"
    if reason is not None:
        return BlockReplay(_rounded_requests(trace), False, f"{reason}: each request counts rounded up to 512 B")
    deltas = np.zeros(len(trace), dtype=np.int64)
    memory = _Memory(_segments_at_start(segments, trace), in_use_at_start, _max_split_bytes(snapshot))
    for index, event in enumerate(trace):
        action, address, size = event.get("action"), int(event.get("addr", -1)), int(event.get("size", 0))
        if action == "alloc":
            deltas[index] = memory.allocate(address, size)
        elif action in FREE_DONE_ACTIONS:
            deltas[index] = -memory.free(address, size)
        elif action in SEGMENT_GROW:
            memory.add_segment(address, size)
        elif action in SEGMENT_SHRINK:
            memory.drop_segment(address)
    if memory.mismatches:
        return BlockReplay(deltas, False, f"{memory.mismatches} allocations or frees did not fit the replayed "
                                          "segments: they count rounded up to 512 B")
    return BlockReplay(deltas, True)


def _rounded_requests(trace: list[dict]) -> np.ndarray:
    """Without a replay: each request's own size, rounded up as the allocator rounds it."""
    deltas = np.zeros(len(trace), dtype=np.int64)
    for index, event in enumerate(trace):
        action = event.get("action")
        if action == "alloc":
            deltas[index] = rounded(int(event.get("size", 0)))
        elif action in FREE_DONE_ACTIONS:
            deltas[index] = -rounded(int(event.get("size", 0)))
    return deltas
