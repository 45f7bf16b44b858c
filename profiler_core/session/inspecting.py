"""`sysprof inspect` and the Configure screen's model numbers: the inspector process (runner/inspect_model),
started and read from here, so neither the CLI nor the app imports torch or the user's code."""
from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.errors import ConfigError, InspectFailed
from sysprof.profiler_core.base.processes import torch_module
from sysprof.profiler_core.base.records import InspectReport

INSPECT_TIMEOUT_S = 300.0  # a large user model on the meta device: minutes at worst, never forever


def inspect_argv(cfg: RunConfig, depth: int) -> list[str]:
    return [*torch_module("sysprof.profiler_core.runner.inspect_model"), "--config-json",
            json.dumps(cfg.to_dict()), "--depth", str(depth)]


def read_inspect_output(stdout: str, stderr: str, returncode: int, runs_root: Path) -> InspectReport:
    """The report, or the inspector's one-line reason as an error (exit 2: the config; 1: the model raised)."""
    found = events.decode_lines(stdout, events.HELPER_EVENTS + (events.FAILED,))
    if found and found[-1]["event"] == events.INSPECT:
        return found[-1]["report"]
    failure = found[-1] if found else {"kind": "error", "message": _died_without_a_word(returncode)}
    if failure.get("kind") == events.CONFIG:
        raise ConfigError(failure["message"])
    log = _keep_stderr(stderr, runs_root)
    raise InspectFailed(f"{failure['message']}" + (f" (traceback in {log})" if log else ""))


def _died_without_a_word(returncode: int) -> str:
    if returncode < 0:  # killed: the kernel's OOM killer, a kill from outside
        try:
            return f"the inspector was killed by {signal.Signals(-returncode).name} before it reported"
        except ValueError:
            pass
    return f"the inspector exited with code {returncode} before it reported"


def inspector_not_started(exc: OSError, argv: list[str]) -> InspectFailed:
    """The inspector could not be started (its python gone, not executable, no memory to fork): one line."""
    return InspectFailed(f"cannot start the inspector ({argv[0]}): {exc.strerror or exc}")


def _keep_stderr(stderr: str, runs_root: Path) -> Path | None:
    if not stderr.strip():
        return None
    try:
        runs_root.mkdir(parents=True, exist_ok=True)
        log = runs_root / rundir.INSPECT_STDERR
        log.write_text(stderr)
        return log
    except OSError:  # an unwritable runs root must not hide the reason itself
        return None


def inspect_model(cfg: RunConfig, depth: int, runs_root: Path, timeout_s: float = INSPECT_TIMEOUT_S) -> InspectReport:
    argv = inspect_argv(cfg, depth)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise InspectFailed(f"inspecting the model took more than {timeout_s:.0f} s") from None
    except OSError as exc:
        raise inspector_not_started(exc, argv) from None
    return read_inspect_output(done.stdout, done.stderr, done.returncode, runs_root)
