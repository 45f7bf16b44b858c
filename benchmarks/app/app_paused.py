"""Does watching a run in the app slow its steps? Measured inside one run: the real app (in tmux) runs a long
config, and this script stops the app's process (SIGSTOP) and lets it go on (SIGCONT) in turns of --window
measured steps, so the same runner process, on the same machine at the same minute, has steps with the app
drawing and steps with the app frozen. The ratio of adjacent windows (app running ÷ app stopped) leaves out the
spread between processes that makes app-vs-CLI runs in fresh processes need hundreds of pairs to tell 2% apart.

    python -m benchmarks.app.app_paused [--model small --ctx 256 --dtype bf16 --device cuda] [--steps 400]
        [--window 20]

What it cannot see: anything the app changes for the whole run (the runner's thread count when the app launches
it, stated in the run's record); `app_vs_cli` measures those. The runner writes its events to the app's pipe
while the app is stopped; a window of --window steps is far below the pipe's 64 KiB, so the runner never waits.
Needs tmux. The target on the GPU: app/CLI ≤ 1.02.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.app.app_vs_cli import TMUX, config, finished, start_in_app
from benchmarks.harness import APP_MODULE, add_config_flags, paired_interval


def app_pid(session: str) -> int:
    """The app's own process, the pane shell's child (never the app's children: the run's session and runner go
    on while the app is stopped)."""
    shell = TMUX("display", "-p", "-t", session, "#{pane_pid}").strip()
    children = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
    for pid in map(int, children):
        if APP_MODULE in command_line(pid).split():
            return pid
    raise AssertionError(f"no app process under the tmux pane {shell}")


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def state(pid: int) -> str:
    """The process's state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def measured_steps(run_dir: Path, seen: int) -> list[dict]:
    """The measured steps written after the first `seen` lines of steps.jsonl (a line still being written waits)."""
    path = run_dir / "steps.jsonl"
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()[seen:]
    if lines and not lines[-1].endswith("}"):
        lines = lines[:-1]
    return [json.loads(line) for line in lines]


def follow(run_dir: Path, pid: int, window: int) -> list[tuple[bool, float]]:
    """(app running, step wall ms) for the measured steps, toggling the app every `window` of them. Left out: the
    step during which a toggle happened (partly in each state), and steps read in the same poll after the step
    that triggered it (they ran before the switch)."""
    steps: list[tuple[bool, float]] = []
    running, seen, count, straddles = True, 0, 0, False
    try:
        while not (run_dir / "summary.json").is_file():
            new = measured_steps(run_dir, seen)
            seen += len(new)
            toggled = False
            for step in (s for s in new if s.get("kind") != "warmup"):
                if not (straddles or toggled):  # steps read after a switch in the same read ran before it
                    steps.append((running, step["wall_ms"]))
                straddles = False
                count += 1
                if count % window == 0 and not toggled:
                    running, toggled = not running, True
                    os.kill(pid, signal.SIGCONT if running else signal.SIGSTOP)
                    if not running:
                        stopped_within(pid, 0.5)
            straddles = straddles or toggled  # the step running now began in the other state
            time.sleep(0.002)
    finally:
        os.kill(pid, signal.SIGCONT)
    return steps


def stopped_within(pid: int, seconds: float) -> None:
    """Proof that SIGSTOP reached the app (state T), so the windows compare what they say they compare."""
    deadline = time.monotonic() + seconds
    while state(pid) not in ("T", "t"):
        assert time.monotonic() < deadline, f"the app did not stop: state {state(pid)}"
        time.sleep(0.001)


def window_ratios(steps: list[tuple[bool, float]]) -> list[float]:
    """Median of each window with the app running ÷ the median of the stopped window next to it (each running
    window paired with the stopped one after it, so a slow drift pairs like with like)."""
    windows: list[tuple[bool, list[float]]] = []
    for running, wall in steps:
        if not windows or windows[-1][0] != running:
            windows.append((running, []))
        windows[-1][1].append(wall)
    return [statistics.median(a) / statistics.median(b)
            for (a_running, a), (b_running, b) in zip(windows, windows[1:]) if a_running and not b_running]


def main() -> None:
    parser = argparse.ArgumentParser()
    add_config_flags(parser, model="tiny", ctx=64, device="cpu", warmup=5, steps=400)
    parser.add_argument("--window", type=int, default=20, help="measured steps per turn of the app")
    parser.add_argument("--runs", type=int, default=1, help="runs, each a fresh app and runner")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="app-paused-"))
    print(f"config {config(args)}; window {args.window} steps; {os.cpu_count()} CPUs", flush=True)
    every: list[float] = []
    with TMUX:
        for run in range(args.runs):
            every += one_run(args, work, run)
    if args.runs > 1:
        ratio, low, high = paired_interval(every)
        print(f"all {args.runs} runs: {len(every)} window pairs; running/stopped {ratio:.4f} [{low:.4f}–{high:.4f}]")
    print(json.dumps({"window_ratios": every}))  # so the pairs of several calls can be pooled


def one_run(args, work: Path, run: int) -> list[float]:
    """A fresh app and runner, the app stopped and let go in turns: the run's window ratios, printed."""
    session = f"sysprof-paused-{os.getpid()}-{run}"
    try:
        run_dir = start_in_app(config(args), work / "runs", work / "config", session, under_shell=True)
        steps = follow(run_dir, app_pid(session), args.window)
        finished(run_dir)
    finally:
        TMUX.kill_session(session)
    ratios = window_ratios(steps)
    ratio, low, high = paired_interval(ratios)
    running = [wall for on, wall in steps if on]
    stopped = [wall for on, wall in steps if not on]
    print(f"run {run + 1}: {len(ratios)} window pairs; step median app running "
          f"{statistics.median(running):.2f} ms, app stopped {statistics.median(stopped):.2f} ms; "
          f"running/stopped {ratio:.4f} [{low:.4f}–{high:.4f}]", flush=True)
    return ratios


if __name__ == "__main__":
    main()
