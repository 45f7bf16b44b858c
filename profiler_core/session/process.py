"""Start runner subprocesses and read their events (no torch here: the launcher stays light)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.processes import python_module, torch_module
from sysprof.profiler_core.base.records import RunError, RunSummary

RUNNER = "sysprof.profiler_core.runner"
CANCEL_GRACE_S = 15.0  # time an interrupted runner (and a wrapping nsys) gets to finish its files


def runner_argv(cfg: RunConfig, run_dir: Path, capture: str = "none", launcher: Sequence[str] = (),
                hold: bool = False) -> list[str]:
    """One runner process, or torchrun starting one per rank (this node's first rank's events on stdout).

    launcher: a command the runner runs under (nsys profile …); with ranks torchrun starts it once per rank.
    hold: the runner starts up, then waits to be released (runner/hold.py; one process only)."""
    # Fresh under a launcher (a process a warm-start server forked would escape it) and as ranks on GPUs, whose end
    # in a forked process is not yet proven; ranks on the CPU end as runner/distributed.end_gloo_rank says.
    fresh = launcher or (cfg.distributed and cfg.device != "cpu")
    runner = python_module(RUNNER) if fresh else torch_module(RUNNER)
    runner += ["--run-dir", str(run_dir), "--config-json", json.dumps(cfg.to_dict())]
    runner += ["--capture", capture] if capture != "none" else []
    runner += ["--hold"] if hold else []
    if not cfg.distributed:
        return [*launcher, *runner]
    # torchrun runs the given command as each rank's program (--no-python): the launcher, then python -P
    return [*torchrun_argv(cfg), "--no-python", *launcher, *runner]


def torchrun_argv(cfg: RunConfig) -> list[str]:
    """torch.distributed.run: on one node a standalone rendezvous, which takes a free port itself (no port to collide
    with another run's); over nodes the c10d rendezvous every node names. No restarts: a rank that fails ends the
    run with its reason."""
    meet = ["--standalone"] if cfg.nnodes == 1 else ["--nnodes", str(cfg.nnodes), "--rdzv-backend", "c10d",
                                                     "--rdzv-endpoint", str(cfg.rdzv_endpoint)]
    return [*torch_module("torch.distributed.run"), *meet, "--nproc-per-node", str(cfg.nproc),
            "--max-restarts", "0"]


def session_argv(cfg: RunConfig, run_dir: Path, nsys: str | None = None) -> list[str]:
    """The whole run (clean pass, then profiling and memory passes as configured) as one process."""
    argv = [*python_module("sysprof.profiler_core.session"), "--run-dir", str(run_dir),
            "--config-json", json.dumps(cfg.to_dict())]
    return argv + (["--nsys", nsys] if nsys else [])


def mark_killed(run_dir: Path, cfg: RunConfig, returncode: int | None) -> RunSummary:
    """The runner died without a summary (killed, segfault): write one from the steps that finished.

    A summary already there (the clean pass finished before a later pass died) is kept as it is."""
    return _mark_ended(run_dir, cfg, events.KILLED, f"runner exited with code {returncode} before finishing")


def mark_died(run_dir: Path, cfg: RunConfig, reason: str) -> RunSummary:
    """The run's own process vanished (host reboot, kill -9 of its group): a summary from the finished steps."""
    done = sum(1 for step in rundir.read_steps(run_dir) if step.get("kind") == "measured")
    return _mark_ended(run_dir, cfg, events.DIED, f"{reason}: died at step {done} of {cfg.steps}")


def _mark_ended(run_dir: Path, cfg: RunConfig, kind: str, message: str) -> RunSummary:
    from sysprof.profiler_core.analysis.metrics import build_summary

    existing = rundir.read_summary(run_dir)
    if existing:
        return existing
    manifest = rundir.read_json(run_dir / rundir.MANIFEST) or {}
    error: RunError = {"kind": kind, "message": message, "phase": None, "peak_allocated_bytes": None}
    steps = rundir.read_steps(run_dir)
    model = manifest.get("model") or {}
    summary = build_summary(cfg, manifest.get("env", {}), steps, events.FAILED_STATUS, str(run_dir), error=error,
                            params=model.get("params"), flops=model.get("flops_per_step"))
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    return summary


class RunnerProcess:
    """A runner (or nsys wrapping one) in our process group, so a terminal's Ctrl-C reaches it too."""

    def __init__(self, argv: list[str], run_dir: Path, held: bool = False, env: dict[str, str] | None = None):
        self.run_dir = run_dir
        self._stderr = (run_dir / rundir.STDERR).open("ab")
        try:  # env: added to ours, never in its place (the NCCL and multicast settings must reach every process)
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._stderr,
                                         stdin=subprocess.PIPE if held else None,
                                         env={**os.environ, **env} if env else None)
        except OSError:
            self._stderr.close()
            raise

    def release(self) -> None:
        """A held runner (--hold) goes on from where it waits."""
        self._close_stdin(f"{events.RELEASE_LINE}\n".encode())

    def abandon(self) -> None:
        """A held runner is not needed: its stdin closes, it exits without writing anything."""
        self._close_stdin(b"")
        self.wait_after_interrupt()

    def _close_stdin(self, line: bytes) -> None:
        if self.proc.stdin is None or self.proc.stdin.closed:
            return
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.close()
        except BrokenPipeError:  # it has ended already: its events or its exit code say how
            pass

    def events(self) -> Iterator[dict]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = events.decode_line(line)
            if event is not None:
                yield event
        self.wait()

    def wait(self, timeout: float | None = None) -> int:
        code = self.proc.wait(timeout)
        self._stderr.close()
        return code

    def interrupt(self) -> int:
        """SIGINT (the runner saves what finished; nsys writes its report), then wait or kill."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.wait_after_interrupt()

    def wait_after_interrupt(self) -> int:
        try:
            return self.wait(CANCEL_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.wait()


def signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
