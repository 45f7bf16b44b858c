"""A runner process started fresh against one a warm-start server forked: CPU and wall time per process, and the
step medians each measured, in fresh processes taken in turns.

    .venv/bin/python -m benchmarks.startup.warm_start [--repeat 7] [--device cpu|cuda] [--model tiny] [--ctx 32] …
                                                      [--against CHECKOUT]

fresh: SYSPROF_WARM_START=0; the launched process imports torch and runs the runner, and its CPU is the waited-for
child's. warm: the launched process stands in for a process the server forked. Its CPU is the stand-in's plus the
forked process's whole CPU, its end included, which its server counts once it has reaped it (/proc/PID/stat's cutime
and cstime); own_cpu_s is what the forked process printed of its own CPU before its end (own_cpu.py). --against: a
third side, warm processes running another checkout's code (an older commit in a git worktree: before/after).
Servers are started and ready before the first sample, in a folder of this benchmark's own; their start-up (one
import of torch each) is not in the samples. OMP_NUM_THREADS=1 unless the caller sets it.
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

from benchmarks.harness import checkout_env
from sysprof.profiler_core.base.processes import torch_module

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")


def sample(config: dict, run_dir: Path, env: dict[str, str]) -> dict:
    argv = [*torch_module("benchmarks.startup.own_cpu"), "sysprof.profiler_core.runner", "--run-dir", str(run_dir),
            "--config-json", json.dumps(config)]
    scratch = env["XDG_RUNTIME_DIR"]
    reaped, started = servers_reaped_cpu(scratch), time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    launched = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    forked_cpu = servers_reaped_cpu(scratch) - reaped  # one sample at a time: only this one's forked process
    own = float(done.stderr.rsplit("own-cpu ", 1)[1])
    summary = json.loads((run_dir / "summary.json").read_text())
    forked = forked_cpu > 0
    return {"wall_s": wall, "cpu_s": launched + forked_cpu, "own_cpu_s": own, "forked": forked,
            "step_median_ms": summary["phases"]["step"]["median_ms"]}


def servers_reaped_cpu(scratch: str) -> float:
    """CPU of every process the warm-start servers in scratch forked and have reaped (cutime + cstime)."""
    total = 0.0
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or scratch.encode() not in (proc / "cmdline").read_bytes():
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        total += (int(fields[13]) + int(fields[14])) / TICK
    return total


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
    parser.add_argument("--against", type=Path, help="another checkout, sampled warm in turns with the rest")
    args = parser.parse_args()
    config = {"model": args.model, "ctx": args.ctx, "batch": args.batch, "warmup": 2, "steps": args.steps,
              "device": args.device}
    with tempfile.TemporaryDirectory(prefix="warm-") as scratch:
        sides = environments(scratch, args.against)
        for side, env in sides.items():
            if side != "fresh":
                ready(config, Path(scratch), env)
        rows = []
        for index in range(args.repeat):
            for side, env in sides.items():
                rows.append({"side": side, "index": index, **sample(config, Path(scratch) / f"{side}-{index}", env)})
    report(rows, args.out)


def environments(scratch: str, against: Path | None) -> dict[str, dict[str, str]]:
    """Each side's environment: this checkout fresh and warm, and the other checkout warm (its code first on the
    path; the benchmarks' own modules from this one)."""
    def env(checkout: Path | None) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [checkout_env(checkout)[1].get("PYTHONPATH") if checkout else None,
                                             str(ROOT), os.environ.get("PYTHONPATH")]))
        return {"OMP_NUM_THREADS": "1", **os.environ, "XDG_RUNTIME_DIR": scratch, "PYTHONPATH": path}
    sides = {"fresh": {**env(None), "SYSPROF_WARM_START": "0"}, "warm": env(None)}
    return sides | ({f"warm {against.name}": env(against)} if against else {})


def report(rows: list[dict], out: Path | None) -> None:
    if out:
        out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for side in dict.fromkeys(row["side"] for row in rows):
        mine = [row for row in rows if row["side"] == side]
        print(f"{side}: {sum(row['forked'] for row in mine)} of {len(mine)} processes forked by the server")
        for field in ("cpu_s", "wall_s", "step_median_ms"):
            values = [row[field] for row in mine]
            print(f"{side:5s} {field:15s} median {statistics.median(values):9.3f}  "
                  f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)})")


if __name__ == "__main__":
    main()
