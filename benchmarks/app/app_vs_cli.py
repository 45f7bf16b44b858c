"""Does watching a run in the app slow the steps it measures? The same config from the app (the real app in a real
terminal: tmux) and from the CLI, interleaved (CLI, app, then app, CLI, …), each run a fresh process; prints the
step medians per side, their spread, the ratio of medians and the app's own CPU while the steps were measured.

    python -m benchmarks.app.app_vs_cli [--pairs 5] [--model tiny --ctx 64 --batch 4 --steps 30 --device cpu]
        [--before CHECKOUT]

--before: also the app of another checkout (a git worktree of an older commit) as a third side, in the same
rounds, so a change to the app is measured against the code before it on the same machine at the same time.

Needs tmux. The target: app/CLI step median ≤ 1.05.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import APP_MODULE, checkout_env, tool_argv
from benchmarks.tmux_server import TmuxServer

ROOT = Path(__file__).resolve().parents[2]
TMUX = TmuxServer("sysprof-bench")  # the apps' private tmux server: main starts it and kills it at the end


def config(args) -> dict:
    return {"model": args.model, "ctx": args.ctx, "batch": args.batch, "mode": getattr(args, "mode", "train"),
            "dtype": args.dtype, "warmup": args.warmup, "steps": args.steps, "device": args.device}


def new_run(runs: Path, before: set[Path], timeout: float = 600) -> Path:
    """The run directory that appeared since `before`, once its summary is written."""
    deadline = time.monotonic() + timeout
    while not (runs.is_dir() and set(runs.iterdir()) - before):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.2)
    return finished(next(iter(set(runs.iterdir()) - before)), deadline - time.monotonic())


def from_cli(cfg: dict, runs: Path) -> Path:
    before = set(runs.iterdir()) if runs.is_dir() else set()
    flags = [part for key, value in cfg.items() for part in (f"--{key}", str(value))]
    argv, env = tool_argv("run", "--runs-dir", str(runs), "--json", *flags)
    subprocess.run(argv, check=True, capture_output=True, cwd=ROOT, env=env)
    return new_run(runs, before)


def from_app(cfg: dict, runs: Path, home: Path, checkout: Path | None = None) -> Path:
    session = f"sysprof-bench-{os.getpid()}"
    try:
        run_dir = finished(start_in_app(cfg, runs, home, session, checkout))
        deadline = time.monotonic() + 10  # the app writes its own load once it has followed the run to the end
        while app_cpu(run_dir) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        return run_dir
    finally:
        TMUX.kill_session(session)


def start_in_app(cfg: dict, runs: Path, home: Path, session: str, checkout: Path | None = None,
                 under_shell: bool = False) -> Path:
    """The real app in a tmux session started on cfg (its saved config) and told to run it: the new run's
    directory, as soon as it exists. under_shell: the pane's process stays the shell, the app its child (tmux
    sends SIGCONT to a pane process that stops, so only a child can be held stopped)."""
    (home / "sysprof-tui").mkdir(parents=True, exist_ok=True)
    (home / "sysprof-tui" / "last_config.json").write_text(json.dumps(cfg))
    before = set(runs.iterdir()) if runs.is_dir() else set()
    module, env = checkout_env(checkout, APP_MODULE)
    where = ["-e", f"PYTHONPATH={env['PYTHONPATH']}"] if checkout and env.get("PYTHONPATH") else []
    app = f"cd {checkout or ROOT} && {sys.executable} {' '.join(module)} --runs-dir {runs}" + (
        "; true" if under_shell else "")  # a command after it: the shell waits instead of exec'ing python
    TMUX("new-session", "-d", "-s", session, "-x", "100", "-y", "30", "-e", f"XDG_CONFIG_HOME={home}", *where, app)
    deadline = time.monotonic() + 60
    while not (runs.is_dir() and set(runs.iterdir()) - before):  # keys sent while it starts are lost: resend
        assert time.monotonic() < deadline, "the app never started the run"
        TMUX("send-keys", "-t", session, "C-r")
        time.sleep(1.0)
    return next(iter(set(runs.iterdir()) - before))


def finished(run_dir: Path, timeout: float = 600) -> Path:
    """run_dir once its summary is written."""
    deadline = time.monotonic() + timeout
    while not (run_dir / "summary.json").is_file():
        assert time.monotonic() < deadline, "the run never finished"
        time.sleep(0.2)
    return run_dir


def step_median(run_dir: Path) -> float:
    return json.loads((run_dir / "summary.json").read_text())["phases"]["step"]["median_ms"]


def app_cpu(run_dir: Path) -> float | None:
    record = run_dir / "app.json"
    return json.loads(record.read_text()).get("ui_cpu_pct_while_measured") if record.is_file() else None


def main() -> None:
    with TMUX:
        measure()


def measure() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--ctx", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="fp32")
    parser.add_argument("--before", type=Path, help="also this checkout's app, as the side app-before")
    args = parser.parse_args()
    cfg = config(args)
    work = Path(tempfile.mkdtemp(prefix="app-vs-cli-"))
    runs, home = work / "runs", work / "config"
    names = ["cli", "app", *(["app-before"] if args.before else [])]
    sides: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names[1:]}
    print(f"config {cfg}; {args.pairs} rounds, interleaved; {os.cpu_count()} CPUs")
    for pair in range(args.pairs):
        for side in (names if pair % 2 == 0 else names[::-1]):
            checkout = args.before if side == "app-before" else None
            run_dir = from_cli(cfg, runs) if side == "cli" else from_app(cfg, runs, home, checkout)
            sides[side].append(step_median(run_dir))
            if side != "cli" and app_cpu(run_dir) is not None:
                cpu[side].append(app_cpu(run_dir))
            load = app_cpu(run_dir) if side != "cli" else None
            print(f"round {pair + 1} {side}: step median {sides[side][-1]:.2f} ms"
                  + (f", app CPU while measured {load:.1f}%" if load is not None else ""), flush=True)
    for side, values in sides.items():
        print(f"{side}: median {statistics.median(values):.2f} ms, min {min(values):.2f}, max {max(values):.2f}")
    for side in names[1:]:
        pairs = [app / cli for app, cli in zip(sides[side], sides["cli"], strict=True)]
        print(f"{side}/CLI: ratio of medians {statistics.median(sides[side]) / statistics.median(sides['cli']):.3f}; "
              f"per round median {statistics.median(pairs):.3f} (min {min(pairs):.3f}, max {max(pairs):.3f})")
        if cpu[side]:
            print(f"{side} CPU while measured: median {statistics.median(cpu[side]):.1f}% of a core "
                  f"(min {min(cpu[side]):.1f}, max {max(cpu[side]):.1f})")


if __name__ == "__main__":
    main()
