"""Wall time of short `sysprof` commands, each in a fresh interpreter.

    .venv/bin/python -m benchmarks.startup.cli [--repeat 10] [--root CHECKOUT] [--fixture STATS_DIR]

Times `python -m sysprof.profiler_core --help`, `models`, `models --json` and `analyze STATS_DIR` from process start to
exit (interpreter start included: what a user waits for). Commands are run round-robin so drift on a shared
machine hits them alike; the report is median and min–max over the repeats. --root runs another checkout (e.g. an
older commit in a git worktree) with this interpreter, for a before/after comparison; the fixture defaults to this
checkout's ../shared/fixtures/h200_small_fp32 (an nsys stats directory: analyze needs pandas there, not torch).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import checkout_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT.parent / "shared" / "fixtures" / "h200_small_fp32"


def commands(fixture: Path) -> dict[str, list[str]]:
    return {"--help": ["--help"], "models": ["models"], "models --json": ["models", "--json"],
            "analyze STATS_DIR": ["analyze", str(fixture)]}


def run_seconds(argv: list[str], root: Path) -> float:
    module, env = checkout_env(root)  # the checkout's code, not the editable install's
    start = time.perf_counter()
    subprocess.run([sys.executable, *module, *argv], cwd=root, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    args = parser.parse_args()
    root, todo = args.root.resolve(), commands(args.fixture.resolve())
    for argv in todo.values():  # once untimed: bytecode compiled, files in the page cache
        run_seconds(argv, root)
    samples: dict[str, list[float]] = {name: [] for name in todo}
    for _ in range(args.repeat):
        for name, argv in todo.items():
            samples[name].append(run_seconds(argv, root))
    print(f"{root} ({sys.executable})")
    for name, seconds in samples.items():
        print(f"  {name:18s} median {statistics.median(seconds):.3f} s  "
              f"(min {min(seconds):.3f}, max {max(seconds):.3f}, n={len(seconds)})")


if __name__ == "__main__":
    main()
