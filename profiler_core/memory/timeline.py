"""Downsampling an active-bytes series for a terminal sparkline or plot.

Buckets are uniform in time when the trace has `time_us` (so a phase takes the width its duration
deserves), otherwise uniform in event index. Each bucket keeps its *maximum*, including the level that
carried into it from before its first event, so the peak survives any downsampling and a flat stretch
with no events is drawn at its real height rather than as a gap.
"""

from __future__ import annotations

import numpy as np

DEFAULT_MAX_POINTS = 2000


def _bucket_edges(positions: np.ndarray, n_buckets: int) -> np.ndarray:
    return np.linspace(float(positions[0]), float(positions[-1]), n_buckets + 1)


def bucket_max(positions: np.ndarray, levels: np.ndarray, start_level: int, n_buckets: int):
    """(bucket start positions, max level per bucket) for a step series sampled at `positions`."""
    edges = _bucket_edges(positions, n_buckets)
    bucket_of_event = np.clip(np.searchsorted(edges, positions, side="right") - 1, 0, n_buckets - 1)
    maxima = np.full(n_buckets, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(maxima, bucket_of_event, levels)
    # Level holding when each bucket opens: the last event strictly before its start edge.
    last_before = np.searchsorted(positions, edges[:-1], side="left") - 1
    carried = np.where(last_before >= 0, levels[np.maximum(last_before, 0)], start_level)
    return edges[:-1], np.maximum(maxima, carried)


def downsample_timeline(times_us: list, levels: np.ndarray, start_level: int,
                        max_points: int = DEFAULT_MAX_POINTS) -> dict:
    """{"t": [...], "active_bytes": [...], "t_unit": "ms"|"event"} with at most max_points points."""
    levels = np.asarray(levels, dtype=np.int64)
    if len(levels) == 0:
        return {"t": [0.0], "active_bytes": [int(start_level)], "t_unit": "event"}
    has_time = all(t is not None for t in times_us) and len(times_us) == len(levels)
    if has_time:
        positions = (np.asarray(times_us, dtype=np.int64) - int(times_us[0])) / 1000.0
        has_time = bool(np.all(np.diff(positions) >= 0))  # bucketing needs time order
    if not has_time:
        positions = np.arange(len(levels), dtype=np.float64)
    unit = "ms" if has_time else "event"
    if len(levels) <= max_points or positions[-1] == positions[0]:
        return {"t": positions.round(4).tolist(), "active_bytes": levels.tolist(), "t_unit": unit}
    starts, maxima = bucket_max(positions, levels, start_level, max_points)
    return {"t": starts.round(4).tolist(), "active_bytes": maxima.tolist(), "t_unit": unit}
