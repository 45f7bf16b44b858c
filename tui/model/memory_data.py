"""The Memory screen's tables and numbers from memory/analysis.json and the run's config (pure)."""
from __future__ import annotations

import bisect
from pathlib import Path

from sysprof.profiler_core.api import RunDirError, runs


def load_memory_analysis(memory_dir: Path) -> tuple[dict | None, str | None]:
    """(analysis, None), (None, why it cannot be read), or (None, None) when there is none (tui/model/advice.py says
    why from the run)."""
    try:
        return runs.AnalysisFolder(memory_dir).read_analysis(), None
    except RunDirError as exc:
        return None, str(exc)


def peaks_by_phase(timeline: dict) -> dict[str, int]:
    """Highest active bytes inside each phase's stretches of the timeline (between consecutive marks)."""
    times, levels, marks = timeline.get("t") or [], timeline.get("active_bytes") or [], timeline.get("phase_marks")
    key = "t_ms" if timeline.get("t_unit") == "ms" else "event_index"
    peaks: dict[str, int] = {}
    for mark, following in zip(marks or [], list(marks or [])[1:] + [None]):
        start, end = mark.get(key), following.get(key) if following else None
        if start is None:
            continue
        lo = max(bisect.bisect_right(times, start) - 1, 0)
        hi = bisect.bisect_left(times, end) if end is not None else len(times)
        stretch = levels[lo:max(hi, lo + 1)]
        if stretch:
            peaks[mark["phase"]] = max(peaks.get(mark["phase"], 0), max(stretch))
    return peaks
