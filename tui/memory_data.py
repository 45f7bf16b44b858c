"""The Memory screen's tables and numbers from memory/analysis.json and the run's config (pure)."""
from __future__ import annotations

import bisect
import json
from pathlib import Path

from models.presets import count_params
from profiler_core.config import RunConfig
from profiler_core.memory.accounting import compare_predicted, predict_memory

ANALYSIS, SNAPSHOT = "analysis.json", "memory_snapshot.pickle"
MEMORY_TABLES = ("top allocations", "categories", "predicted vs measured")


def load_memory_analysis(memory_dir: Path) -> tuple[dict | None, str | None]:
    """(analysis, None) or (None, the reason it is not there and how to get it)."""
    path = memory_dir / ANALYSIS
    if not path.is_file():
        return None, (f"No memory analysis in {memory_dir}. Tick 'memory capture' on the Configure screen "
                      "(CUDA only), or `sysprof run --memory`.")
    try:
        return json.loads(path.read_text()), None
    except (OSError, ValueError) as exc:
        return None, f"cannot read {path}: {exc}"


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


def predicted_rows(config: dict | None, analysis: dict) -> list[dict]:
    """predict_memory for the run's shape against the bytes alive at the measured peak, by category."""
    if not config:
        return []
    try:
        cfg = RunConfig.from_dict(config)
        spec = cfg.spec()
    except (TypeError, ValueError):
        return []
    activation_bytes = 2 if cfg.dtype in ("bf16", "fp16") else 4
    predicted = predict_memory(params=count_params(spec), d_model=spec.d_model, d_ff=spec.d_ff, layers=spec.layers,
                               heads=spec.heads, vocab=spec.vocab, ctx=cfg.ctx, batch=cfg.batch,
                               activation_bytes=activation_bytes, mode=cfg.mode)
    return compare_predicted(predicted, analysis.get("by_category") or {})


def category_rows(analysis: dict) -> list[dict]:
    at_peak, highest = analysis.get("by_category") or {}, analysis.get("max_by_category") or {}
    return [{"category": name, "at_peak_bytes": at_peak.get(name), "max_bytes": highest.get(name)}
            for name in dict.fromkeys([*at_peak, *highest])]


def memory_table(name: str, config: dict | None, analysis: dict) -> list[dict]:
    if name == "top allocations":
        return list(analysis.get("top_allocations") or [])
    if name == "categories":
        return category_rows(analysis)
    return predicted_rows(config, analysis)
