"""GPU-memory snapshot analysis (`torch.cuda.memory._dump_snapshot` pickles) without torch.

Pure stdlib + numpy: a run directory copied to a laptop opens here. Never imports torch or textual.
Names load on first use, so `profiler_core.memory.accounting` (pure arithmetic, used by the app's Configure
screen) does not pay numpy's import time.
"""
from sysprof.profiler_core.base.lazy import lazy_exports

_EXPORTS = {
    "compare_predicted": "accounting", "predict_memory": "accounting", "predict_run_memory": "accounting",
    "analyze_snapshot": "analyze",
    "CATEGORIES": "categories", "RULES": "categories", "classify_allocations": "categories",
    "Allocation": "replay", "Replay": "replay", "replay_trace": "replay",
    "SnapshotError": "snapshot", "load_snapshot": "snapshot", "downsample_timeline": "timeline",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
