"""What every benchmark shares: run the tool (this checkout or another), the config flags, interleaved rounds,
paired ratios with an interval and a pass / FAIL / inconclusive outcome, Markdown tables, and where results go.

Run a benchmark from the repository root as a module: `python3 -m benchmarks.TOPIC.SCRIPT …`.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SOURCE_FOLDERS = ("models", "profiler_core", "tui")
CLI_MODULE, APP_MODULE = "sysprof.profiler_core", "sysprof.tui"


# ---- running the tool ------------------------------------------------------------------------------------------------

def checkout_env(checkout: Path | None = None, module: str = CLI_MODULE) -> tuple[list[str], dict[str, str]]:
    """(`-m` arguments that start module from checkout, an environment that makes them import its code).

    None: the installed project (the editable install of the README). Another checkout (an older commit in a git
    worktree, for before/after): since the one import root its folders are laid out under `sysprof/` (links in a
    temporary folder) first on PYTHONPATH; an older checkout, whose packages are top-level, runs from its folder."""
    if checkout is None:
        return ["-m", module], dict(os.environ)
    checkout = checkout.resolve()
    if not (checkout / "setup.py").is_file():  # before the import root: `python -m profiler_core` from the folder
        return ["-m", module.removeprefix("sysprof.")], {**os.environ, "PYTHONPATH": str(checkout)}
    layout = Path(tempfile.mkdtemp(prefix="sysprof-checkout-"))
    (layout / "sysprof").mkdir()
    for folder in SOURCE_FOLDERS:
        (layout / "sysprof" / folder).symlink_to(checkout / folder, target_is_directory=True)
    path = os.pathsep.join(filter(None, (str(layout), os.environ.get("PYTHONPATH"))))
    return ["-m", module], {**os.environ, "PYTHONPATH": path}


def tool_argv(*args: str, checkout: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """`sysprof ARGS…` as an argv for this interpreter, and its environment (the caller's, never cleared: the
    NVLink multicast switches and CUDA_VISIBLE_DEVICES pass on)."""
    module, env = checkout_env(checkout)
    return [sys.executable, *module, *args], env


def run_tool(*args: str, checkout: Path | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    argv, env = tool_argv(*args, checkout=checkout)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=checkout.resolve() if checkout else None)


def run_json(*args: str, checkout: Path | None = None, timeout: float | None = None) -> dict[str, Any]:
    """`sysprof ARGS… --json`'s document; a run that printed none is {"status": "exit N", "stderr": its tail}."""
    done = run_tool(*args, "--json", checkout=checkout, timeout=timeout)
    if done.stdout.strip():
        return json.loads(done.stdout)
    return {"status": f"exit {done.returncode}", "stderr": done.stderr[-2000:]}


# ---- the config flags every benchmark takes --------------------------------------------------------------------------

CONFIG_FLAGS = ("model", "ctx", "batch", "mode", "dtype", "device", "warmup", "steps")


def add_config_flags(parser: argparse.ArgumentParser, **defaults: Any) -> None:
    """--model --ctx --batch --mode --dtype --device --warmup --steps, with the benchmark's own defaults."""
    base = {"model": "small", "ctx": 256, "batch": 4, "mode": "train", "dtype": "fp32", "device": "cuda",
            "warmup": 3, "steps": 10} | defaults
    for flag in CONFIG_FLAGS:
        parser.add_argument(f"--{flag}", type=type(base[flag]), default=base[flag])


def config_args(args: argparse.Namespace) -> list[str]:
    """The config flags as `sysprof run` takes them."""
    return [item for flag in CONFIG_FLAGS for item in (f"--{flag}", str(getattr(args, flag)))]


# ---- interleaving ----------------------------------------------------------------------------------------------------

def interleaved(labels: Sequence[str], rounds: int) -> Iterator[tuple[int, str]]:
    """(round, label) in an order that lets drift hit every label alike: each round runs every label once, the
    order reversed every other round (A B C, C B A, …), so none is always first or last."""
    for index in range(rounds):
        for label in (labels if index % 2 == 0 else list(reversed(labels))):
            yield index, label


# ---- paired ratios ---------------------------------------------------------------------------------------------------

def paired_interval(ratios: Sequence[float]) -> tuple[float, float, float]:
    """The geometric mean of paired ratios (one per process or round) and its 95% t interval (n − 1 df)."""
    import numpy as np
    from scipy import stats

    logs = np.log(np.asarray(ratios, dtype=float))
    center = float(logs.mean())
    half = float(stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs)))
    return math.exp(center), math.exp(center - half), math.exp(center + half)


def judge(base: Sequence[float], other: Sequence[float], ratios: Sequence[float], limit: float) -> dict[str, Any]:
    """Per-process medians of two paths and their paired ratios other/base (≥ 2): the ratio and its interval,
    pass (inside 1 ± limit) / FAIL (outside) / inconclusive, and `sysprof compare`'s unpaired verdict with the
    spread between processes, as a user would see it."""
    from sysprof.profiler_core.analysis.metrics import between_process_stats
    from sysprof.profiler_core.analysis.verdicts import verdict

    ratio, low, high = paired_interval(ratios)
    outcome = "pass" if 1 - limit <= low and high <= 1 + limit else \
        "FAIL" if low > 1 + limit or high < 1 - limit else "inconclusive"
    return {"ratio": ratio, "ci_low": low, "ci_high": high, "outcome": outcome,
            "verdict": verdict(list(base), list(other), min_effect=limit)["verdict"],
            "spread_pct": max(between_process_stats(list(v))["robust_cv_pct"] or 0.0 for v in (base, other))}


# ---- output ----------------------------------------------------------------------------------------------------------

def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table: numbers right-aligned, floats with 3 decimals, None as —."""
    columns = list(columns or (rows[0] if rows else []))

    def cell(value: Any) -> str:
        return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)

    numeric = [all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) for c in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def results_dir(topic: str, machine: str | None = None, day: datetime.date | None = None) -> Path:
    """benchmarks/TOPIC/results/YYYY-MM-DD_MACHINE/: results filed by what they measure and when (git ignores
    results/; the stored ones are packed in benchmarks/TOPIC/results.tar.xz)."""
    machine = machine or os.environ.get("SYSPROF_BENCH_MACHINE") or socket.gethostname().split(".")[0]
    return BENCHMARKS / topic / "results" / f"{(day or datetime.date.today()).isoformat()}_{machine}"
