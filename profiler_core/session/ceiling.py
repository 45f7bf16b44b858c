"""The matmul ceiling of a config (runner/ceiling.py), measured in a process of its own and read from here, so
the torch-free side never imports torch or the user's code."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.processes import torch_module

CEILING_TIMEOUT_S = 180.0  # start-up, one meta pass and a few seconds of matmuls: minutes only for a huge model


def ceiling_argv(cfg: RunConfig) -> list[str]:
    return [*torch_module("sysprof.profiler_core.runner.ceiling"), "--config-json", json.dumps(cfg.to_dict())]


def measure_ceiling(cfg: RunConfig, stderr_log: Path) -> dict[str, Any]:
    """The ceiling record, or {"error": one line} (its stderr kept in stderr_log)."""
    try:
        done = subprocess.run(ceiling_argv(cfg), capture_output=True, text=True, timeout=CEILING_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"not measured in {CEILING_TIMEOUT_S:.0f} s"}
    except OSError as exc:
        return {"error": f"cannot start the ceiling's process: {exc.strerror or exc}"}
    lines = done.stdout.strip().splitlines()
    try:
        record = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        record = None
    if not isinstance(record, dict) or ("error" not in record and "ms_per_step" not in record):
        record = {"error": f"the ceiling's process exited with code {done.returncode} without a record"}
    if "error" in record and done.stderr.strip():
        try:
            stderr_log.write_text(done.stderr)
            record["error"] += f" ({stderr_log.name} says more)"
        except OSError:
            pass
    return record
