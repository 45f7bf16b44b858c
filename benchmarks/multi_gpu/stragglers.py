"""Is a slowed rank named, and is no rank named without one? `sysprof run --nproc 2` repeated in fresh launches.

    python3 -m benchmarks.multi_gpu.stragglers [--runs 10] [--delay-ms 30] [--model small] [--device cuda] [--out FILE]

Each round runs the same config twice, interleaved: once with SYSPROF_TEST_SLOW_RANK=1:DELAY (rank 1's forward
delayed by about DELAY ms) and once without. A slowed run counts as named when the findings call rank 1 the
straggler and rank 0 the victim waiting in all-reduce; a plain run counts as clean when no rank is flagged and no
finding names anyone (stricter than the issue's "no rank flagged", which plain_unflagged counts). Prints one JSON
line per run, then the totals (the issue's figure: 10 of 10 each). --budget-s stops starting rounds after that long.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

from benchmarks.harness import tool_argv


def one_run(args: argparse.Namespace, slowed: bool) -> dict:
    env = dict(os.environ)
    if slowed:
        env["SYSPROF_TEST_SLOW_RANK"] = f"1:{args.delay_ms}"
    command, _ = tool_argv("run", "--model", args.model, "--dtype", args.dtype, "--attention", "sdpa", "--ctx",
                           str(args.ctx), "--batch", str(args.batch), "--warmup", "3", "--steps", str(args.steps),
                           "--nproc", "2", "--device", args.device, "--json")
    if args.runs_dir:
        command += ["--runs-dir", args.runs_dir]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    summary = json.loads(done.stdout) if done.stdout.strip() else {"status": f"exit {done.returncode}"}
    ranks = summary.get("ranks") or {}
    said = ranks.get("findings") or []
    flagged = [row["rank"] for row in ranks.get("rows") or [] if row["flagged"]]
    steps = [row["median_ms"].get("step") for row in ranks.get("rows") or []]
    named = (len(said) >= 2 and said[0].startswith("rank 1 is the straggler")
             and said[1].startswith("victim waits in all-reduce: the backward of rank 0"))
    return {"slowed": slowed, "status": summary.get("status"), "step_ms": steps, "flagged": flagged,
            "findings": said, "right": named if slowed else (not said and not flagged)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--delay-ms", type=float, default=30.0)
    parser.add_argument("--model", default="small")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs-dir")
    parser.add_argument("--out", help="also write every run's line and the totals here (JSON)")
    parser.add_argument("--budget-s", type=float, help="start no new round after this many seconds")
    args = parser.parse_args()
    results = []
    started = time.monotonic()
    for _ in range(args.runs):
        if args.budget_s and time.monotonic() - started > args.budget_s:
            break  # the totals say how many rounds ran
        for slowed in (True, False):
            results.append(one_run(args, slowed))
            print(json.dumps(results[-1]), flush=True)
    totals = {"slowed_named": sum(r["right"] for r in results if r["slowed"]),
              "plain_clean": sum(r["right"] for r in results if not r["slowed"]),
              "plain_unflagged": sum(not r["flagged"] for r in results if not r["slowed"]),
              "runs_each": len(results) // 2,
              "delay_ms": args.delay_ms,
              "config": f"{args.model} {args.dtype} ctx {args.ctx} batch {args.batch} per rank"}
    print(json.dumps(totals))
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"runs": results, "totals": totals}, out, indent=1)


if __name__ == "__main__":
    main()
