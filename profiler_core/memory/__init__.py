"""GPU-memory snapshot analysis (`torch.cuda.memory._dump_snapshot` pickles) without torch.

Pure stdlib + numpy: a run directory copied to a laptop opens here. Never imports torch or textual.
"""

from .accounting import compare_predicted, predict_memory
from .analyze import analyze_snapshot
from .categories import CATEGORIES, RULES, classify_allocations
from .replay import Allocation, Replay, replay_trace
from .snapshot import SnapshotError, load_snapshot
from .timeline import downsample_timeline

__all__ = [
    "CATEGORIES", "RULES", "Allocation", "Replay", "SnapshotError", "analyze_snapshot", "classify_allocations",
    "compare_predicted", "downsample_timeline", "load_snapshot", "predict_memory", "replay_trace",
]
