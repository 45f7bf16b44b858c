"""A runner process started fresh against one a warm-start server forked: CPU and wall time per process, and the
step medians each measured, in fresh processes taken in turns.

    .venv/bin/python -m benchmarks.startup.warm_start [--repeat 7] [--device cpu|cuda] [--model tiny] [--ctx 32] …

fresh: SYSPROF_WARM_START=0; the launched process imports torch and runs the runner, and its CPU is the waited-for
child's. warm: the launched process stands in for a process the server forked; that one prints its own CPU since the
fork (benchmarks/startup/own_cpu.py), added to the stand-in's. The server is started and ready before the first
sample, in a folder of this benchmark's own; its start-up (one import of torch) is not in the samples.
OMP_NUM_THREADS=1 unless the caller sets it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from sysprof.profiler_core.base.processes import torch_module

ROOT = Path(__file__).resolve().parents[2]


def sample(config: dict, run_dir: Path, env: dict[str, str]) -> dict:
    argv = [*torch_module("benchmarks.startup.own_cpu"), "sysprof.profiler_core.runner", "--run-dir", str(run_dir),
            "--config-json", json.dumps(config)]
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    launched = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = float(done.stderr.rsplit("own-cpu ", 1)[1])
    summary = json.loads((run_dir / "summary.json").read_text())
    forked = own > launched  # run here, the launched process's CPU holds its own; forked, only the stand-in's
    return {"wall_s": wall, "cpu_s": launched + own if forked else launched, "own_cpu_s": own, "forked": forked,
            "step_median_ms": summary["phases"]["step"]["median_ms"]}


def ready(config: dict, scratch: Path, env: dict[str, str]) -> None:
    """Warm samples until one is forked: the first starts the server and runs on its own."""
    for attempt in range(60):
        probe = sample(config, scratch / f"ready-{attempt}", env)
        if probe["forked"]:
            return
        refused = list(scratch.glob("sysprof-warm-*/*.refused"))
        if refused:
            raise SystemExit(f"the warm-start server refused: {refused[0].read_text().strip()}")
        time.sleep(2)
    raise SystemExit("no warm-start server became ready")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--ctx", type=int, default=32)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", type=Path, help="a JSON line per sample here")
    args = parser.parse_args()
    config = {"model": args.model, "ctx": args.ctx, "batch": args.batch, "warmup": 2, "steps": args.steps,
              "device": args.device}
    with tempfile.TemporaryDirectory(prefix="warm-") as scratch:
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        base = {"OMP_NUM_THREADS": "1", **os.environ, "XDG_RUNTIME_DIR": scratch, "PYTHONPATH": path}
        sides = {"fresh": {**base, "SYSPROF_WARM_START": "0"}, "warm": base}
        ready(config, Path(scratch), sides["warm"])
        rows = []
        for index in range(args.repeat):
            for side, env in sides.items():
                rows.append({"side": side, "index": index, **sample(config, Path(scratch) / f"{side}-{index}", env)})
    report(rows, args.out)


def report(rows: list[dict], out: Path | None) -> None:
    if out:
        out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for side in ("fresh", "warm"):
        mine = [row for row in rows if row["side"] == side]
        print(f"{side}: {sum(row['forked'] for row in mine)} of {len(mine)} processes forked by the server")
        for field in ("cpu_s", "wall_s", "step_median_ms"):
            values = [row[field] for row in mine]
            print(f"{side:5s} {field:15s} median {statistics.median(values):9.3f}  "
                  f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)})")


if __name__ == "__main__":
    main()
