"""Does sysprof's timed step cost anything? Bare CUDA-event loop vs sysprof's run_step, same process.

Both time the same model, optimizer and batch, interleaved in rounds so clock and thermal drift hit both
alike. Pass: sysprof's median step within 1% of the bare loop, its phase medians within 2% of the bare
loop's CUDA events. Usage (GPU): python3 benchmarks/overhead.py [--model small] [--rounds 10] [--steps 20]
[--model-factory FILE.py:callable] (the user's own model, its dims from --model; the bare loop reads its logits
the way its author would, `.logits` or the tensor itself)
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
import torch.nn.functional as F

from profiler_core.config import RunConfig
from profiler_core.runner.timing import StepInstruments, run_step
from profiler_core.runner.user_model import logits_of
from profiler_core.runner.workload import AUTOCAST_DTYPES, build_workload


def bare_step(model, optimizer, tokens, targets, dtype) -> dict:
    """The textbook loop: events around each phase, one synchronize at the end."""
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


def compare(model_name: str, dtype: str, rounds: int, steps: int, factory: str | None = None) -> dict:
    cfg = RunConfig(model=model_name, dtype=dtype, device="cuda", mode="train", model_factory=factory)
    work = build_workload(cfg, torch.device("cuda"))
    tools = StepInstruments(work.device)
    samples: dict[str, list[dict]] = {"bare": [], "sysprof": []}
    for _ in range(5):  # warm-up both paths
        bare_step(work.model, work.optimizer, work.tokens, work.targets, dtype)
        run_step(work, tools)
    for _ in range(rounds):
        samples["bare"] += [bare_step(work.model, work.optimizer, work.tokens, work.targets, dtype) for _ in range(steps)]
        samples["sysprof"] += [run_step(work, tools) for _ in range(steps)]
    del work
    torch.cuda.empty_cache()
    return {name: _medians(records) for name, records in samples.items()}


def _medians(records: list[dict]) -> dict:
    medians = {"step": statistics.median(r["wall_ms"] for r in records)}
    for phase in ("forward", "backward", "optimizer"):
        medians[phase] = statistics.median(r["phases_ms"][phase] for r in records)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="small")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--model-factory", help="time the user's model: FILE.py:callable or module:callable")
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()} · torch {torch.__version__} · {time.strftime('%Y-%m-%d')}"
          f" · {args.model_factory or args.model} ({args.model} dims), batch 4, ctx 256, train, {args.rounds}×{args.steps} steps per side, interleaved\n")
    print("| dtype | what | bare loop ms | sysprof ms | difference | limit | pass |")
    print("|---|---|---:|---:|---:|---:|---|")
    for dtype in ("fp32", "bf16"):
        result = compare(args.model, dtype, args.rounds, args.steps, args.model_factory)
        for what in ("step", "forward", "backward", "optimizer"):
            bare, ours = result["bare"][what], result["sysprof"][what]
            limit = 0.01 if what == "step" else 0.02
            diff = ours / bare - 1
            print(f"| {dtype} | {what} | {bare:.3f} | {ours:.3f} | {diff:+.2%} | ±{limit:.0%} | "
                  f"{'yes' if abs(diff) <= limit else 'NO'} |")


if __name__ == "__main__":
    main()
