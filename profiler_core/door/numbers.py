"""Numbers about steps the app computes while a run streams, and comparisons of two runs."""
from __future__ import annotations

from sysprof.profiler_core.analysis.compare import (
    compare_summaries,
    config_differences,
    differences_text,
    other_step_fields,
)
from sysprof.profiler_core.analysis.metrics import mfu_missing, phase_stats, throughput
from sysprof.profiler_core.base.records import phases_of

__all__ = ["compare_summaries", "config_differences", "differences_text", "mfu_missing", "other_step_fields",
           "phase_stats", "phases_of", "throughput"]
