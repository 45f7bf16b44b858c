"""Is the right rank named, with the right cause, when something real slows it, and no rank named when nothing does?
`sysprof run --nproc 2` repeated in fresh launches, the conditions interleaved round by round.

    python3 -m benchmarks.multi_gpu.stragglers [--runs 10] [--conditions plain,heavy,light,host,hook]
        [--model small] [--device cuda] [--nproc 2] [--out FILE] [--budget-s S] [--delay-share 0.12]

Conditions (each slows rank 1 through something the tool did not build, except `hook`):
  plain   nothing: no rank may be named.
  heavy   another process on GPU 1 doing 8192² bf16 matmuls back to back (a neighbour training job).
  light   another process on GPU 1 doing 2048² bf16 matmuls in bursts with pauses (a light neighbour).
  host    rank 1's threads pinned to two cores that four busy-looping processes also run on (a loaded host).
  hook    SYSPROF_TEST_SLOW_RANK=1:DELAY, the test-only delay in rank 1's forward: --delay-ms, or with
          --delay-share that share of the step the latest plain launch measured (list plain before hook in
          --conditions, so it is the round's own; a fixed 10 ms was 3–5% of xl's step, under the findings' minimum
          effect, and 20% of small's).
A run is right when the findings name rank 1 the straggler with the condition's cause (the other process on GPU 1;
the CPU it waited for), or, for plain, name no rank at all. Prints one JSON line per run, then the totals.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import tool_argv

NEIGHBOURS = {  # the other process on GPU 1: a loop of bf16 matmuls, back to back or in bursts with pauses
    "heavy": "a = torch.randn(8192, 8192, device='cuda:1', dtype=torch.bfloat16)\n"
             "while True: a @ a",
    "light": "a = torch.randn(2048, 2048, device='cuda:1', dtype=torch.bfloat16)\n"
             "while True:\n    for _ in range(20): a @ a\n    torch.cuda.synchronize(1); time.sleep(0.004)",
}
BUSY = "import os, sys\nos.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(',')})\nwhile True: pass"
HOST_CORES = 2
CAUSES = {"heavy": "shares GPU 1", "light": "shares GPU 1", "host": "for a CPU", "hook": ""}


def start_cause(condition: str, cores: list[int]) -> list[subprocess.Popen]:
    if condition in NEIGHBOURS:
        code = f"import time, torch\n{NEIGHBOURS[condition]}"
        started = [subprocess.Popen([sys.executable, "-c", code])]
        time.sleep(6)  # its CUDA context and first kernels, before the run starts
        return started
    if condition == "host":
        return [subprocess.Popen([sys.executable, "-c", BUSY, ",".join(map(str, cores))])
                for _ in range(2 * len(cores))]
    return []


def rank_pid(local_rank: int, timeout: float = 120.0) -> int | None:
    """The pid of this node's runner process of local_rank (torchrun's child), once it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if b"sysprof.profiler_core.runner" not in (entry / "cmdline").read_bytes():
                    continue
                if f"LOCAL_RANK={local_rank}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    return int(entry.name)
            except OSError:
                continue
        time.sleep(0.2)
    return None


def pin(pid: int, cores: list[int]) -> None:
    """Every thread of pid onto cores (threads it starts later inherit it)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), set(cores))
        except OSError:
            pass


def one_run(args: argparse.Namespace, condition: str, delay_ms: float) -> dict:
    env = dict(os.environ)
    if condition == "hook":
        env["SYSPROF_TEST_SLOW_RANK"] = f"1:{delay_ms}"
    command, _ = tool_argv("run", "--model", args.model, "--dtype", args.dtype, "--attention", "sdpa", "--ctx",
                           str(args.ctx), "--batch", str(args.batch), "--warmup", "3", "--steps", str(args.steps),
                           "--optimizer-impl", "fused", "--nproc", str(args.nproc), "--device", args.device,
                           "--json")
    if args.runs_dir:
        command += ["--runs-dir", args.runs_dir]
    cores = sorted(os.sched_getaffinity(0))[-HOST_CORES:]
    causes = start_cause(condition, cores)
    try:
        run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if condition == "host" and (pid := rank_pid(1)):
            pin(pid, cores)
        out, err = run.communicate()
    finally:
        for cause in causes:
            cause.send_signal(signal.SIGKILL)
            cause.wait()
    summary = json.loads(out) if out.strip() else {"status": f"exit {run.returncode}: {err.strip()[-300:]}"}
    return judged(condition, summary) | ({"delay_ms": round(delay_ms, 2)} if condition == "hook" else {})


def hook_delay_ms(args: argparse.Namespace, results: list[dict]) -> float:
    """--delay-share of the slowest rank's median step in the latest plain launch, else --delay-ms."""
    plain = [r for r in results if r["condition"] == "plain" and r["rows"]]
    steps = [(row.get("median_ms") or {}).get("step") for row in plain[-1]["rows"]] if plain else []
    steps = [step for step in steps if step]
    return args.delay_share * max(steps) if args.delay_share and steps else args.delay_ms


def right_rank_and_cause(condition: str, said: list[str]) -> bool:
    """plain: no rank called the straggler. Otherwise rank 1 named with the condition's cause (for a neighbour,
    its straggler finding or the line that names the process sharing its GPU) and no other rank called the
    straggler."""
    named = [f for f in said if " is the straggler" in f]
    if condition == "plain":
        return not named
    if any(not f.startswith("rank 1 ") for f in named):
        return False
    cause = CAUSES[condition]
    return any(f.startswith("rank 1 ") and cause in f for f in (named if condition in ("host", "hook") else said))


def judged(condition: str, summary: dict) -> dict:
    ranks = summary.get("ranks") or {}
    said = ranks.get("findings") or []
    right = right_rank_and_cause(condition, said)
    tests = [{k: t.get(k) for k in ("rank", "slower_steps", "steps", "p_value", "share", "excess_ms")}
             for t in ranks.get("stragglers") or []]
    rows = [{k: r.get(k) for k in ("rank", "median_ms", "cpu_wait_ms", "sm_clock_mhz", "power_w")}
            for r in ranks.get("rows") or []]
    return {"condition": condition, "status": summary.get("status"), "right": right, "findings": said,
            "tests": tests, "rows": rows, "run_dir": summary.get("run_dir")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--conditions", default="plain,heavy,light,host,hook")
    parser.add_argument("--delay-ms", type=float, default=10.0)
    parser.add_argument("--delay-share", type=float, help="the hook's delay as this share of the plain step")
    parser.add_argument("--model", default="small")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--nproc", type=int, default=2, help="ranks (the cause is on rank 1's GPU or cores)")
    parser.add_argument("--runs-dir")
    parser.add_argument("--out", help="also write every run's line and the totals here (JSON)")
    parser.add_argument("--budget-s", type=float, help="start no new round after this many seconds")
    args = parser.parse_args()
    if args.delay_share is not None and not 0 < args.delay_share < 1:
        parser.error("--delay-share is a share of the step: between 0 and 1")
    conditions = args.conditions.split(",")
    results: list[dict] = []
    started = time.monotonic()
    for _ in range(args.runs):
        if args.budget_s and time.monotonic() - started > args.budget_s:
            break  # the totals say how many rounds ran
        for condition in conditions:
            results.append(one_run(args, condition, hook_delay_ms(args, results)))
            print(json.dumps(results[-1]), flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps({"runs": results}, indent=1))
    totals = {c: f"{sum(r['right'] for r in results if r['condition'] == c)} of "
                 f"{sum(r['condition'] == c for r in results)}" for c in conditions}
    totals["config"] = (f"{args.model} {args.dtype} ctx {args.ctx} batch {args.batch} per rank, {args.steps} steps, "
                        f"{args.nproc} ranks")
    print(json.dumps(totals))
    if args.out:
        Path(args.out).write_text(json.dumps({"runs": results, "totals": totals}, indent=1))


if __name__ == "__main__":
    main()
