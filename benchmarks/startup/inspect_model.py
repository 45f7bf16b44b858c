"""`sysprof inspect` wall time in fresh processes (the target: 2.7B under 3 s on CPU, no weights).

    python3 -m benchmarks.startup.inspect_model [--model 2.7B] [--ctx 512] [--repeats 5]

Each repeat is a new `python -m sysprof.profiler_core inspect --json` with no GPU visible, timed from spawn to exit
(torch import included), and checked: counted FLOPs must equal the closed form. Prints one JSON line per repeat, then
the median, min and max.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time

from benchmarks.harness import tool_argv


def one(model: str, ctx: int) -> dict:
    argv, env = tool_argv("inspect", "--model", model, "--ctx", str(ctx), "--batch", "4", "--json")
    env["CUDA_VISIBLE_DEVICES"] = ""  # on CPU, as on a laptop
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - started
    report = json.loads(done.stdout)
    return {"wall_s": wall, "in_process_s": report["seconds"], "params": report["params"]["total"],
            "flops_equal_closed_form": report["flops"]["step"] == report["closed_form_flops"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="2.7B")
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    walls = []
    for _ in range(args.repeats):
        result = one(args.model, args.ctx)
        walls.append(result["wall_s"])
        print(json.dumps(result), flush=True)
    print(json.dumps({"model": args.model, "cpus": os.cpu_count(), "median_s": statistics.median(walls),
                      "min_s": min(walls), "max_s": max(walls)}))


if __name__ == "__main__":
    main()
