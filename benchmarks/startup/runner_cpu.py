"""CPU a runner process spends starting against the step work it does: fresh processes, round-robin.

    .venv/bin/python -m benchmarks.startup.runner_cpu [--repeat 7]

Each sample is one fresh process and its CPU (user + system, from the kernel's account of the waited-for child):
`import torch`; `import torch, torch._dynamo` (every training process imports the latter: building an optimizer
and its first step do); and a whole `sysprof` runner pass of the tiny preset on the CPU (2 warm-up and 3 measured
train steps at ctx 32), which is what each real run a test starts costs. Median and min–max over the repeats;
OMP_NUM_THREADS=1 unless the caller sets it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TINY = {"model": "tiny", "ctx": 32, "batch": 4, "warmup": 2, "steps": 3, "device": "cpu"}


def child_cpu_s(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # one compute thread, as the tests run them (a thread count given outside is kept)
    subprocess.run(argv, check=True, capture_output=True, env={"OMP_NUM_THREADS": "1", **os.environ})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(scratch: Path) -> dict[str, list[str]]:
    runner = [sys.executable, "-P", "-m", "sysprof.profiler_core.runner", "--config-json", json.dumps(TINY)]
    return {"import torch": [sys.executable, "-c", "import torch"],
            "import torch, torch._dynamo": [sys.executable, "-c", "import torch, torch._dynamo"],
            "runner pass, tiny on the CPU": [*runner, "--run-dir", str(scratch / "run")]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        named = commands(Path(scratch))
        samples: dict[str, list[float]] = {name: [] for name in named}
        for _ in range(args.repeat):
            for name, argv in named.items():
                samples[name].append(child_cpu_s(argv))
    for name, seconds in samples.items():
        print(f"{name:30s} CPU median {statistics.median(seconds):.2f} s  "
              f"(min {min(seconds):.2f}, max {max(seconds):.2f}, n={len(seconds)})")


if __name__ == "__main__":
    main()
