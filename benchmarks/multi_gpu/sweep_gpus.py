"""Does `sweep --gpus 0,1` take about half the time of the same sweep on one GPU?

    python3 -m benchmarks.multi_gpu.sweep_gpus [--rounds 2] [--gpus 0,1] [--out FILE]

The same 4-cell sweep (small, bf16, four context lengths: single-GPU cells) runs with `--gpus 0` and with
`--gpus 0,1`, the two interleaved round by round (order alternating), each a fresh `sysprof sweep` command timed
from start to exit. Prints one JSON line per sweep, then the median wall time of each and their ratio (the figure:
about 0.5), and which GPU each cell of the last two-GPU sweep recorded.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from benchmarks.harness import run_tool

CELLS = ["--model", "small", "--dtype", "bf16", "--attention", "sdpa", "--ctx", "128,256,384,512", "--batch", "4",
         "--warmup", "3", "--steps", "30"]


def one_sweep(gpus: str, runs_dir: str) -> dict:
    started = time.perf_counter()
    done = run_tool("sweep", *CELLS, "--gpus", gpus, "--runs-dir", runs_dir, "--json")
    wall_s = time.perf_counter() - started
    document = json.loads(done.stdout) if done.stdout.strip() else {"cells": []}
    cells = document["cells"]
    return {"gpus": gpus, "wall_s": wall_s, "exit": done.returncode, "statuses": [c["status"] for c in cells],
            "sweep_dir": document.get("sweep_dir"), "stderr_tail": done.stderr[-300:] if done.returncode else ""}


def cell_gpus(sweep_dir: str) -> list[str | None]:
    from pathlib import Path

    from sysprof.profiler_core.studies.document import sweep_rows

    return [row["gpu"] for row in sweep_rows(Path(sweep_dir))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gpus", default="0,1")
    parser.add_argument("--out")
    args = parser.parse_args()
    one, several = args.gpus.split(",")[0], args.gpus
    results = []
    with tempfile.TemporaryDirectory() as runs_dir:
        for round_ in range(args.rounds):
            for gpus in ((one, several) if round_ % 2 == 0 else (several, one)):
                results.append(one_sweep(gpus, runs_dir))
                print(json.dumps(results[-1]), flush=True)
        last = next(r for r in reversed(results) if r["gpus"] == several)
        placed = cell_gpus(last["sweep_dir"]) if last["sweep_dir"] else []
    medians = {g: statistics.median(r["wall_s"] for r in results if r["gpus"] == g) for g in (one, several)}
    totals = {"one_gpu_s": medians[one], "several_gpus_s": medians[several],
              "ratio": medians[several] / medians[one], "rounds": args.rounds, "cells_ran_on": placed,
              "all_ok": all(s == "ok" for r in results for s in r["statuses"]) and all(r["exit"] == 0 for r in results)}
    print(json.dumps(totals))
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"sweeps": results, "totals": totals}, out, indent=1)


if __name__ == "__main__":
    main()
