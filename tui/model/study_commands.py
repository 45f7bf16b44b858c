"""The Studies screen's commands (pure): the templates it lists, a typed line turned into the CLI process it
starts, and the one-line reason a refused study left in its log."""
from __future__ import annotations

import shlex
from pathlib import Path

from sysprof.profiler_core.api import control, studies

# The sweeps' templates; each study kind brings its own (studies/kinds/), listed between them.
GPU_SWEEPS = {"seed sweep: small…2.7B × ctx 128–1024 × fp32/bf16":
              "sweep --model small,medium,large,xl,2.7B --ctx 128,256,512,1024 --dtype fp32,bf16 --name seed"}
GPU_LAST = {"custom sweep": "sweep --model small --ctx 128,256 --attention naive,sdpa"}
CPU_SWEEPS = {  # sized for a laptop's CPU
    "sweep: tiny × ctx × batch (CPU)": "sweep --model tiny --device cpu --ctx 32,64 --batch 1,2 --warmup 1 --steps 3"}


def study_choices(on_gpu: bool) -> dict[str, str]:
    """The app's list of studies: title → the command it starts."""
    if on_gpu:
        return GPU_SWEEPS | studies.study_templates(on_gpu=True) | GPU_LAST
    return CPU_SWEEPS | studies.study_templates(on_gpu=False)


def study_argv(command: str, runs_root: Path) -> list[str]:
    """The CLI line for what the user typed; ValueError with the reason when it is neither sweep nor study."""
    words = shlex.split(command)
    if not words or words[0] not in ("sweep", "study", "ab"):
        raise ValueError("start with `sweep` (options of `sysprof run`, comma-separated), `study KIND` or `ab --a "
                         "OPTIONS --b OPTIONS`")
    return control.study_argv(words, runs_root)


def last_line(log: Path, start: int) -> str:
    """The last line the process wrote to stderr: the CLI's one-line reason when it refused the study."""
    try:
        with log.open("rb") as handle:
            handle.seek(start)
            lines = handle.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].removeprefix("sysprof: error: ") if lines else ""
