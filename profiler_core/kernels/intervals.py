"""Which range holds each time: sorted `searchsorted` lookups over NVTX-style [start, end] ranges (no pandas)."""

from __future__ import annotations

import numpy as np

NO_RANGE = -1


def containing_range(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the range (starts[i] <= t <= ends[i]) holding each time, or NO_RANGE.

    Ranges must not overlap each other; among overlapping ones the latest-starting
    range is the only one considered.
    """
    if len(starts) == 0:
        return np.full(len(times), NO_RANGE)
    order = np.argsort(starts, kind="stable")
    sorted_starts, sorted_ends = starts[order], ends[order]
    position = np.searchsorted(sorted_starts, times, side="right") - 1
    safe = np.clip(position, 0, None)
    inside = (position >= 0) & (times <= sorted_ends[safe])
    return np.where(inside, order[safe], NO_RANGE)


def nesting_levels(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Depth of every range among the others (0: outermost); two ranges of one level never overlap.

    A range that starts inside another counts as nested in it even when it outlives it (start/end ranges of
    the autograd thread may cross), so levels stay overlap-free whatever the input.
    """
    levels = np.zeros(len(starts), dtype=np.int64)
    open_ends: list[int] = []  # ends of the ranges enclosing the current one, innermost last
    for index in np.argsort(starts, kind="stable"):
        while open_ends and open_ends[-1] <= starts[index]:
            open_ends.pop()
        levels[index] = len(open_ends)
        open_ends.append(ends[index])
    return levels


def innermost_range(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the innermost range holding each time, or NO_RANGE; ranges may nest (one lookup per level)."""
    found = np.full(len(times), NO_RANGE)
    if len(starts) == 0:
        return found
    levels = nesting_levels(starts, ends)
    for level in range(int(levels.max()) + 1):
        members = np.flatnonzero(levels == level)
        inside = containing_range(times, starts[members], ends[members])
        found = np.where(inside != NO_RANGE, members[np.clip(inside, 0, None)], found)
    return found


def outermost_range(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the outermost range holding each time, or NO_RANGE; ranges may nest."""
    if len(starts) == 0:
        return np.full(len(times), NO_RANGE)
    members = np.flatnonzero(nesting_levels(starts, ends) == 0)
    inside = containing_range(times, starts[members], ends[members])
    return np.where(inside != NO_RANGE, members[np.clip(inside, 0, None)], NO_RANGE)
