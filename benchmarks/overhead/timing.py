"""Does sysprof's timed step cost anything? Bare CUDA-event loop vs sysprof's run_step, judged like any comparison.

Each of --processes fresh processes builds the model once and times both paths over the same model, optimizer and
batch, interleaved in rounds (bare then sysprof, then the other order, so drift within a process hits both alike).
A process gives one median per path and phase, and one paired ratio sysprof/bare: the median over its rounds of
the ratio of the two paths' medians in that round (adjacent in time, they share the clocks, the allocator and the
neighbours, so their ratio moves far less than either median). Across processes:

- the ratio's 95% interval: Student's t on the logarithms of the per-process paired ratios;
- `sysprof compare`'s own verdict (verdicts.verdict, unpaired, two gates, the limit as the minimum effect) on the
  per-process medians, and their spread between processes: what a user comparing the two would be told.

Pass: the whole interval lies within the limit (±1% for the step, ±2% for a phase). Fail: the whole interval lies
outside it. Otherwise "inconclusive": the host was too noisy to tell, and more processes would say, so one lucky
or unlucky process can neither pass nor fail the benchmark.

Usage (GPU): python3 -m benchmarks.overhead.timing [--model small] [--processes 5] [--rounds 10] [--steps 20]
[--dtypes fp32,bf16] [--model-factory FILE.py:callable] (the user's own model, its dims from --model; the bare loop
reads its logits the way its author would, `.logits` or the tensor itself) [--nproc 2] 2> processes.jsonl. Each
process's medians go to stderr as a JSON line; `--report processes.jsonl` prints the table again from them (no GPU).

--nproc N: each "process" is a torchrun launch of N ranks, the model under DDP as `sysprof run --nproc N` builds it
(runner/distributed.py); both paths run on every rank in the same rounds (DDP keeps them in lockstep), and every
rank's paired ratio is one sample: the overhead per rank.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import subprocess
import sys
import time

from benchmarks.harness import judge

PHASES = ("step", "forward", "backward", "optimizer")
LIMITS = {"step": 0.01, "forward": 0.02, "backward": 0.02, "optimizer": 0.02}
DDP_STEP_LIMIT = 0.02  # the multi-GPU target: per rank, against a bare DDP loop


def bare_step(model, optimizer, tokens, targets, dtype) -> dict:
    """The textbook loop: events around each phase, one synchronize at the end."""
    import torch
    import torch.nn.functional as F

    from sysprof.profiler_core.runner.user_model import logits_of
    from sysprof.profiler_core.runner.workload import AUTOCAST_DTYPES

    events = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
    started = time.perf_counter()
    events[0].record()
    with torch.autocast("cuda", dtype=AUTOCAST_DTYPES[dtype]) if dtype != "fp32" else contextlib.nullcontext():
        logits = logits_of(model(tokens))
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    events[1].record()
    events[2].record()
    loss.backward()
    events[3].record()
    events[4].record()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    events[5].record()
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - started) * 1e3
    phases = dict(zip(("forward", "backward", "optimizer"), (events[i].elapsed_time(events[i + 1]) for i in (0, 2, 4))))
    return {"wall_ms": wall_ms, "phases_ms": phases}


def workload_of_this_process(cfg):
    """The runner's workload: alone on cuda, or this rank's share under DDP when torchrun started us."""
    import torch

    from sysprof.profiler_core.runner import distributed
    from sysprof.profiler_core.runner.workload import build_workload

    rank = distributed.rank_from_env()
    if rank is None:
        return build_workload(cfg, torch.device("cuda")), None
    device = distributed.rank_device(torch.device("cuda"), rank)
    distributed.join(device)
    return build_workload(cfg, device, distributed.wrapper(cfg, device), rank.rank), rank


def one_process(model_name: str, dtype: str, rounds: int, steps: int, factory: str | None) -> dict:
    """This process's medians per path and phase, the two paths interleaved round by round, order alternating."""
    import torch

    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.runner.timing import StepInstruments, run_step

    cfg = RunConfig(model=model_name, dtype=dtype, device="cuda", mode="train", model_factory=factory)
    work, rank = workload_of_this_process(cfg)
    tools = StepInstruments(work.device)
    paths = {"bare": lambda: bare_step(work.model, work.optimizer, work.tokens, work.targets, dtype),
             "sysprof": lambda: run_step(work, tools)}
    for _ in range(5):  # warm-up both paths
        for step in paths.values():
            step()
    samples: dict[str, list[dict]] = {"bare": [], "sysprof": []}
    ratios: dict[str, list[float]] = {what: [] for what in PHASES}  # per round: sysprof's median over bare's
    for round_ in range(rounds):
        measured = {name: [paths[name]() for _ in range(steps)]
                    for name in (("bare", "sysprof") if round_ % 2 == 0 else ("sysprof", "bare"))}
        bare, ours = _medians(measured["bare"]), _medians(measured["sysprof"])
        for what in PHASES:
            ratios[what].append(ours[what] / bare[what])
        for name, records in measured.items():
            samples[name] += records
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rank": rank.rank if rank else None,
            **{name: _medians(records) for name, records in samples.items()},
            "paired_ratio": {what: statistics.median(values) for what, values in ratios.items()}}


def _medians(records: list[dict]) -> dict:
    medians = {"step": statistics.median(r["wall_ms"] for r in records)}
    for phase in PHASES[1:]:
        medians[phase] = statistics.median(r["phases_ms"][phase] for r in records)
    return medians


def spawn(args: argparse.Namespace, dtype: str) -> list[dict]:
    """One fresh process's medians (this script with --one-process), or each rank's of a fresh torchrun launch; the
    environment passed on unchanged."""
    launch = [sys.executable] if args.nproc == 1 else \
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(args.nproc)]
    command = [*launch, "-m", "benchmarks.overhead.timing", "--one-process", "--model", args.model, "--dtype", dtype,
               "--rounds", str(args.rounds), "--steps", str(args.steps)]
    if args.model_factory:
        command += ["--model-factory", args.model_factory]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="small")
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--dtype", default="fp32", help=argparse.SUPPRESS)
    parser.add_argument("--one-process", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-factory", help="time the user's model: FILE.py:callable or module:callable")
    parser.add_argument("--report", type=argparse.FileType(), help="the table from saved process lines; no GPU")
    parser.add_argument("--nproc", type=int, default=1, help="ranks per launch (DDP over this host's GPUs)")
    args = parser.parse_args()
    if args.one_process:
        print(json.dumps(one_process(args.model, args.dtype, args.rounds, args.steps, args.model_factory)))
        return
    if args.report:
        lines = [json.loads(line) for line in args.report if line.startswith("{")]
        print_table({dtype: [r for r in lines if r["dtype"] == dtype]
                     for dtype in dict.fromkeys(r["dtype"] for r in lines)})
        return
    processes: dict[str, list[dict]] = {dtype: [] for dtype in args.dtypes.split(",")}
    for launch in range(args.processes):  # the dtypes interleaved process by process, as a sweep's cells are
        for dtype, results in processes.items():
            for line in spawn(args, dtype):
                results.append({"dtype": dtype, "launch": launch, **line})
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    ranks = f" · {args.nproc} ranks per launch (DDP), each rank one sample" if args.nproc > 1 else ""
    print(f"# {time.strftime('%Y-%m-%d')} · {args.model_factory or args.model} ({args.model} dims), batch 4, ctx 256, "
          f"train · each process {args.rounds}×{args.steps} steps per path, interleaved{ranks}\n")
    print_table(processes)


def print_table(processes: dict[str, list[dict]]) -> None:
    first = next(iter(processes.values()))[0]
    launches = len(per_launch(next(iter(processes.values()))))
    print(f"{first['device']} · torch {first['torch']} · {launches} fresh launches per dtype\n")
    print("| dtype | what | bare ms (median of processes) | sysprof ms | sysprof/bare, paired [95% CI] | "
          "between-process spread | compare's verdict | limit | outcome |")
    print("|---|---|---:|---:|---:|---:|---|---:|---|")
    for dtype, lines in processes.items():
        results = per_launch(lines)
        for what in PHASES:
            bare, ours = ([r[path][what] for r in results] for path in ("bare", "sysprof"))
            ratios = [r["paired_ratio"][what] if "paired_ratio" in r else r["sysprof"][what] / r["bare"][what]
                      for r in results]  # lines saved before rounds were paired: the process's own medians
            limit = DDP_STEP_LIMIT if what == "step" and len(results) < len(lines) else LIMITS[what]
            j = judge(bare, ours, ratios, limit)
            print(f"| {dtype} | {what} | {statistics.median(bare):.3f} | {statistics.median(ours):.3f} | "
                  f"{j['ratio']:.4f} [{j['ci_low']:.4f}–{j['ci_high']:.4f}] | {j['spread_pct']:.1f}% | {j['verdict']} "
                  f"| ±{limit:.0%} | {j['outcome']} |")


def per_launch(lines: list[dict]) -> list[dict]:
    """One sample per launch: with several ranks, their geometric mean (the ranks of one launch share its host and
    step in lockstep, so they are not independent samples)."""
    launches: dict[object, list[dict]] = {}
    for index, line in enumerate(lines):
        launches.setdefault(line.get("launch", index) if line.get("rank") is not None else index, []).append(line)
    return [ranks[0] if len(ranks) == 1 else _geometric_mean(ranks) for ranks in launches.values()]


def _geometric_mean(ranks: list[dict]) -> dict:
    def mean(values) -> float:
        return math.exp(statistics.fmean(math.log(v) for v in values))

    merged = {"device": ranks[0]["device"], "torch": ranks[0]["torch"]}
    for key in ("bare", "sysprof", "paired_ratio"):
        merged[key] = {what: mean(r[key][what] for r in ranks) for what in PHASES}
    return merged


if __name__ == "__main__":
    main()
