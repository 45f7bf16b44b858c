"""Command → kernel tables: how long `sysprof run --profiler nsys` takes, and where the time goes.

Each build (a checkout: benchmarks/harness.py makes it the code that runs) runs the same config twice
per round, interleaved with the other builds and in fresh processes: once with `--profiler nsys` and once without
(the clean pass alone). Their difference is the profiled part: the profiled runner, nsys's report, the export,
the analysis. Builds that record the breakdown (summary.profile.seconds) print it too, and every run's clean step
median: a profiled runner started early and held beside the clean pass must leave it as fast as without one.

    python3 -m benchmarks.kernels.profiled_time --build new=. --build old=.bench_old [--rounds 3] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import checkout_env

CONFIG = ["--model", "small", "--ctx", "256", "--batch", "4", "--mode", "train", "--warmup", "3", "--steps", "5"]


def timed_run(root: Path, profiler: str, runs: Path) -> dict:
    module, env = checkout_env(root)  # the build's own code, whichever layout it has
    argv = [sys.executable, *module, "run", *CONFIG, "--profiler", profiler, "--runs-dir", str(runs), "--json"]
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root)
    seconds = time.monotonic() - started
    summary = json.loads(result.stdout) if result.stdout.strip() else {"status": f"exit {result.returncode}"}
    profile = summary.get("profile") or {}
    step = (summary.get("phases") or {}).get("step") or {}
    return {"seconds": seconds, "status": summary.get("status"), "breakdown": profile.get("seconds"),
            "profile_error": profile.get("error"), "clean_step_median_ms": step.get("median_ms")}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s ({min(values):.2f}–{max(values):.2f})" if values else "—"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", action="append", required=True, help="NAME=FOLDER")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    builds = dict(item.split("=", 1) for item in args.build)
    results: dict[str, dict[str, list[dict]]] = {name: {"nsys": [], "none": []} for name in builds}
    with tempfile.TemporaryDirectory() as runs:
        for round_index in range(args.rounds):
            order = list(builds) if round_index % 2 == 0 else list(reversed(builds))
            for name in order:
                for profiler in ("nsys", "none") if round_index % 2 == 0 else ("none", "nsys"):
                    record = timed_run(Path(builds[name]).resolve(), profiler, Path(runs))
                    results[name][profiler].append(record)
                    print(f"round {round_index} {name:>4} {profiler:>4}: {record['seconds']:6.2f} s "
                          f"{record['status']} clean step median {record['clean_step_median_ms']} ms "
                          f"{record['breakdown'] or ''}", flush=True)
    for name, by_profiler in results.items():
        with_nsys = [r["seconds"] for r in by_profiler["nsys"]]
        clean = [r["seconds"] for r in by_profiler["none"]]
        parts = [a - b for a, b in zip(with_nsys, clean)]
        print(f"{name}: command → kernel tables {spread(with_nsys)}; clean only {spread(clean)}; "
              f"profiled part (per round) {spread(parts)}")
        for profiler, runs in by_profiler.items():  # a runner held beside the clean pass must not slow its steps
            medians = [r["clean_step_median_ms"] for r in runs if r["clean_step_median_ms"]]
            if medians:
                print(f"    clean step median, --profiler {profiler}: {statistics.median(medians):.2f} ms "
                      f"({min(medians):.2f}–{max(medians):.2f})")
        breakdowns = [r["breakdown"] for r in by_profiler["nsys"] if r["breakdown"]]
        for key in (breakdowns[0] if breakdowns else {}):
            print(f"    {key:>18}: {spread([b[key] for b in breakdowns])}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
