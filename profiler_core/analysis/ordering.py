"""When each process of a comparison ran, and what that allows a verdict to say.

Two groups measured one after the other differ by whatever changed on the node between them (clocks, another
tenant, a warm cache): on a shared H200, fused AdamW "made the forward 20% faster" (p = 0.029) because the node
changed between the two groups. A difference can be laid on the config only when the two sides' processes
interleaved in time (`sysprof ab`, a sweep's round-robin); and a side whose processes trend over time is drifting,
which the spread between them does not describe.

Each process records the wall-clock window of its clean timing pass (summary["ran"]: start and end, epoch seconds);
runs saved before that have none, and then the ordering is unknown (None), never guessed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DRIFT_ALPHA = 0.10  # Kendall's τ test of a trend over run order; 4 monotone processes give p = 0.083
DRIFT_MIN_PROCESSES = 4
Window = tuple[float, float]


def process_windows(summary: Mapping[str, Any]) -> list[Window] | None:
    """(start, end) of each process that finished ok, in run order; None when any of them did not record it."""
    processes = (summary.get("repeats") or {}).get("processes")
    records = [p for p in processes if p.get("status") == "ok"] if processes else [summary]
    windows = [_window(record.get("ran")) for record in records]
    return None if not windows or any(w is None for w in windows) else [w for w in windows if w is not None]


def _window(ran: Mapping[str, Any] | None) -> Window | None:
    if not ran or ran.get("start") is None or ran.get("end") is None:
        return None
    return float(ran["start"]), float(ran["end"])


def interleaved(windows_a: Sequence[Window] | None, windows_b: Sequence[Window] | None) -> bool | None:
    """Did the two sides run interleaved in time (neither wholly before the other)? None: not known."""
    if not windows_a or not windows_b:
        return None
    a_start, a_end = min(w[0] for w in windows_a), max(w[1] for w in windows_a)
    b_start, b_end = min(w[0] for w in windows_b), max(w[1] for w in windows_b)
    return a_start < b_end and b_start < a_end


def drift(values: Sequence[float], windows: Sequence[Window] | None) -> dict[str, Any] | None:
    """A trend of one side's per-process values over the order they ran in (Kendall's τ, p < DRIFT_ALPHA), with
    the change from the first process to the last; None without one (or with too few processes to tell)."""
    if windows is None or len(values) != len(windows) or len(values) < DRIFT_MIN_PROCESSES:
        return None
    from scipy.stats import kendalltau

    order = sorted(range(len(values)), key=lambda i: windows[i][0])
    in_order = [values[i] for i in order]
    tau, p_value = kendalltau(range(len(in_order)), in_order)
    if p_value is None or not p_value < DRIFT_ALPHA:  # nan (all equal) is no trend
        return None
    return {"tau": round(float(tau), 3), "p_value": round(float(p_value), 4),
            "change_pct": round(100 * (in_order[-1] - in_order[0]) / in_order[0], 1) if in_order[0] else None}
