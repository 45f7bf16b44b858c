"""The one door from the front end (tui/) into the core: a few types and a service module for each thing the app
does, nothing that loads torch or pandas when imported. The app starts every process through `control` (python -m
command lines), so a broken model or a CUDA fault can never take the UI down. Painting tables is render/'s.

    vocab     the words the app offers: option vocabularies, presets, the comparison's thresholds
    configs   a config checked, named, sized and written as a command
    numbers   step statistics while a run streams, comparisons of two runs
    gpus      this host's GPUs through NVML
    control   start, follow, attach, cancel and end a run, a study, the inspector, a report
    runs      run directories and their analysis folders
    studies   sweep and study directories, templates and tables
    events    every message between processes and every status a run ends in
"""
from __future__ import annotations

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.errors import ConfigError, RunDirError, SysprofError
from sysprof.profiler_core.base.options import OneLineParser
from sysprof.profiler_core.base.records import PhaseStats, RunError, RunSummary, StepRecord
from sysprof.profiler_core.documents.run_document import Run
from sysprof.profiler_core.door import configs, control, gpus, numbers, runs, studies, vocab

__all__ = ["ConfigError", "OneLineParser", "PhaseStats", "Run", "RunConfig", "RunDirError", "RunError", "RunSummary",
           "StepRecord", "SysprofError", "configs", "control", "events", "gpus", "numbers", "runs", "studies", "vocab"]
