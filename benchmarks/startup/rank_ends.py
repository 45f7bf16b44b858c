"""`python -m benchmarks.startup.rank_ends [--runs N] [--at-once P]`: N two-rank runs of `tiny` on the CPU (DDP and
FSDP in turns), P at a time, each given 90 s: how many ended, how many hung, and the median wall of those that ended.
A rank that hangs at its end (its process group freed while gloo's thread waits for the GIL) shows here as a run
that never returns."""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

TIMEOUT_S = 90


def one_run(index: int, runs_dir: str) -> tuple[str, float]:
    parallel = ("ddp", "fsdp")[index % 2]
    command = [sys.executable, "-m", "sysprof.profiler_core", "run", "--model", "tiny", "--device", "cpu", "--ctx",
               "32", "--batch", "2", "--warmup", "1", "--steps", "3", "--nproc", "2", "--parallel", parallel,
               "--runs-dir", runs_dir]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "hung", time.perf_counter() - started
    return ("ended" if done.returncode == 0 else f"exit {done.returncode}"), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--at-once", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as runs_dir, ThreadPoolExecutor(args.at_once) as pool:
        results = list(pool.map(lambda index: one_run(index, runs_dir), range(args.runs)))
    outcomes = Counter(outcome for outcome, _ in results)
    walls = [wall for outcome, wall in results if outcome == "ended"]
    median = f"{statistics.median(walls):.2f} s" if walls else "none ended"
    print(f"{args.runs} runs, {args.at_once} at a time: {dict(outcomes)}; median wall of those that ended {median}")


if __name__ == "__main__":
    main()
