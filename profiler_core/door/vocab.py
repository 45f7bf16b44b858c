"""The words the app offers and checks against: option vocabularies, presets, the comparison's thresholds."""
from __future__ import annotations

from sysprof.models.presets import PRESETS
from sysprof.profiler_core.analysis.verdicts import ALPHA, MIN_EFFECT, NOISE_SIGMAS, SUGGESTED_REPEATS
from sysprof.profiler_core.base.config import (
    ATTENTIONS,
    COMPILE_MODES,
    CUSTOM,
    DEFAULT_OPTIMIZER,
    DEVICES,
    DIM_FIELDS,
    DTYPES,
    MATMUL_PRECISIONS,
    MODES,
    OPTIMIZER_IMPLS,
    PARALLELS,
    PROFILERS,
)
from sysprof.profiler_core.base.errors import DAMAGED_DATA
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.memory.accounting import PEAK_ITEMS

__all__ = ["ALPHA", "ATTENTIONS", "COMPILE_MODES", "CUSTOM", "DAMAGED_DATA", "DEFAULT_OPTIMIZER", "DEVICES",
           "DIM_FIELDS", "DTYPES", "MATMUL_PRECISIONS", "MIN_EFFECT", "MODES", "NOISE_SIGMAS", "OPTIMIZER_IMPLS",
           "PARALLELS", "PEAK_ITEMS", "PRESETS", "PROFILERS", "RECOMMENDED_TABLE", "SUGGESTED_REPEATS"]
