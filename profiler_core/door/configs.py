"""A run's configuration checked, named, sized and written as a command, before anything starts."""
from __future__ import annotations

from sysprof.models.presets import count_params, human_count
from sysprof.profiler_core.base.config import model_label
from sysprof.profiler_core.base.config_checks import config_problems, type_problems
from sysprof.profiler_core.base.options import config_from_command, config_to_args
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.memory.fit import device_memory, fit_problem
from sysprof.profiler_core.session.rank_checks import gpus_problem

__all__ = ["config_from_command", "config_problems", "config_to_args", "count_params", "device_memory",
           "fit_problem", "gpus_problem", "human_count", "model_label", "predict_run_memory",
           "type_problems"]
