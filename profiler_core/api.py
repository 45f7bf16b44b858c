"""The one door from the front end (tui/) into the core: every name the app needs, and nothing that loads torch
or pandas when imported. The app starts the runner only through `python -m` command lines (session_argv), so a
broken model or a CUDA fault can never take the UI down. Rendering (tables as text, units) is in render/.
"""
from __future__ import annotations

from pathlib import Path

from sysprof.models.phases import attention_part_labels
from sysprof.models.presets import PRESETS, count_params, human_count
from sysprof.profiler_core.analysis.compare import (
    ALPHA,
    MIN_EFFECT,
    NOISE_SIGMAS,
    SUGGESTED_REPEATS,
    compare_summaries,
    config_differences,
    other_step_fields,
)
from sysprof.profiler_core.analysis.metrics import mfu_missing, phase_stats, throughput
from sysprof.profiler_core.analysis.stability import warnings_for_summary
from sysprof.profiler_core.base import events, rundir
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
    RunConfig,
    config_problems,
    model_column,
    model_label,
    type_problems,
)
from sysprof.profiler_core.base.errors import (
    DAMAGED_DATA,
    ConfigError,
    ExportError,
    RunDirError,
    StudyError,
    SysprofError,
)
from sysprof.profiler_core.base.events import RUN_STATES, decode_line, end_reason, finish_event, run_state
from sysprof.profiler_core.base.nvml import GpuTelemetry, NvmlSampler, gpu_count, visible_gpu_count
from sysprof.profiler_core.base.options import OneLineParser, config_from_command, config_to_args
from sysprof.profiler_core.base.records import PhaseStats, RunError, RunSummary, StepRecord, median_ms, phases_of
from sysprof.profiler_core.documents.liveness import RUN, STUDY, LiveProcess, in_progress, live_process
from sysprof.profiler_core.documents.run_document import KERNELS, MEMORY, Run
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE, study_kind
from sysprof.profiler_core.kernels.names import short_kernel_name
from sysprof.profiler_core.kernels.whole_step import whole_step
from sysprof.profiler_core.memory.accounting import PEAK_ITEMS, predict_run_memory
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.session.control import POLL_S, ProcessControl
from sysprof.profiler_core.session.inspecting import (
    INSPECT_TIMEOUT_S,
    inspect_argv,
    inspector_not_started,
    read_inspect_output,
)
from sysprof.profiler_core.session.live import EventFollower, settle_died
from sysprof.profiler_core.session.process import CANCEL_GRACE_S, mark_killed, session_argv, signal_group
from sysprof.profiler_core.session.rank_checks import gpus_problem
from sysprof.profiler_core.studies.catalog import list_studies, study_record


def study_argv(words: list[str], runs_root: Path) -> list[str]:
    """`sysprof sweep|study …` as the process the app starts, streaming STUDY_EVENTS."""
    import sys

    return [sys.executable, "-m", "sysprof.profiler_core", *words, "--runs-dir", str(runs_root), "--events"]


def report_argv(paths: list[Path], target: Path) -> list[str]:
    """`sysprof report PATH… -o TARGET` as the process the app starts (matplotlib and pandas stay out of the app)."""
    import sys

    return [sys.executable, "-m", "sysprof.profiler_core", "report", *map(str, paths), "-o", str(target)]


def report_target(runs_root: Path) -> Path:
    """Where the app writes a report: RUNS_ROOT/reports/DATE-TIME-report.md (-2, -3 … after a second one within
    the same second), its figures beside it."""
    import itertools
    import time

    stem = runs_root / "reports" / time.strftime("%Y%m%d-%H%M%S")
    names = itertools.chain([f"{stem}-report.md"], (f"{stem}-{n}-report.md" for n in itertools.count(2)))
    return Path(next(name for name in names if not Path(name).exists()))


def study_templates(on_gpu: bool) -> dict[str, str]:
    """Each study kind's templates for the app's list (title → command), sized for a GPU node or a CPU."""
    from sysprof.profiler_core.studies.kinds import KINDS

    return {title: command for kind in KINDS.values()
            for title, command in (kind.templates if on_gpu else kind.cpu_templates).items()}


def study_tables(study_dir: Path) -> dict[str, list[dict]]:
    """A study's tables rebuilt from its directory (pandas: call it from a worker thread)."""
    from sysprof.profiler_core.studies.results import study_tables as build

    return build(study_dir)


__all__ = [
    "ATTENTIONS", "CANCEL_GRACE_S", "CUSTOM", "DEFAULT_OPTIMIZER", "DEVICES", "DIM_FIELDS", "DTYPES",
    "MATMUL_PRECISIONS", "MODES", "OPTIMIZER_IMPLS", "COMPILE_MODES",
    "PARALLELS", "attention_part_labels", "gpus_problem", "visible_gpu_count",
    "ALPHA", "MIN_EFFECT", "NOISE_SIGMAS", "SUGGESTED_REPEATS", "PRESETS", "PROFILERS",
    "ConfigError", "ExportError", "GpuTelemetry", "NvmlSampler",
    "DAMAGED_DATA", "OneLineParser", "RunConfig", "RunDirError", "StudyError", "SysprofError", "compare_summaries",
    "config_differences", "other_step_fields",
    "config_problems", "count_params", "decode_line", "end_reason", "events", "finish_event", "gpu_count",
    "human_count",
    "RUN_STATES", "run_state",
    "INSPECT_TIMEOUT_S", "inspect_argv", "report_argv", "report_target", "inspector_not_started", "read_inspect_output",
    "list_studies", "mark_killed", "model_column", "model_label", "median_ms", "PhaseStats", "RunError", "RunSummary",
    "StepRecord", "phase_stats", "phases_of", "predict_run_memory", "rundir", "session_argv", "signal_group",
    "KERNELS", "MEMORY", "Run", "config_to_args", "config_from_command",
    "RECOMMENDED_TABLE", "POLL_S", "ProcessControl", "RUN", "STUDY",
    "EventFollower", "LiveProcess", "in_progress", "live_process", "settle_died",
    "study_argv", "study_kind", "study_record", "study_tables", "study_templates",
    "PEAK_ITEMS", "device_memory", "fit_problem", "mfu_missing", "short_kernel_name", "throughput", "type_problems",
    "warnings_for_summary", "whole_step",
]
