"""What do the --nvtx-modules hooks cost? One model, optimizer and batch timed without hooks, with the module
ranges, and with ranges plus allocator tags (the memory pass's setting), in one process, interleaved in rounds
(the order rotating each round) so clock and thermal drift hit every variant alike.

The hooks run only in the profiled and memory passes, never in the clean timing, so this is the extra slowdown
of those passes on top of the profiler's own. Steps are sysprof's run_step: CUDA events per phase, wall time to a
synchronize. No profiler is attached, so an NVTX call costs only its library's check; under nsys each range is
also recorded (run this script under `nsys profile` to see that part). On the CPU (a smoke check) the ranges go
to a recorder that does nothing.

    python3 -m benchmarks.overhead.module_hooks [--model small] [--dtype fp32] [--depth 3] [--rounds 10] [--steps 20]
                                       [--model-factory FILE.py:callable] [--device cuda|cpu]
    python3 -m benchmarks.overhead.module_hooks --device cpu --model tiny --ctx 32 --rounds 2 --steps 3   # smoke check
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # runnable as a plain script from anywhere

from sysprof.profiler_core.base.config import RunConfig  # noqa: E402
from sysprof.profiler_core.runner.module_ranges import hooked_modules, install_module_ranges  # noqa: E402
from sysprof.profiler_core.runner.timing import StepInstruments, run_step  # noqa: E402
from sysprof.profiler_core.runner.workload import build_workload  # noqa: E402

VARIANTS = {"off": None, "module ranges": "nsys", "ranges + memory tags": "memory"}  # variant → the pass's capture


class NoCalls:
    """Where the ranges go without CUDA: nowhere (the hooks' own Python and autograd cost remains)."""

    def push(self, name: str) -> None: ...
    def pop(self) -> None: ...
    def start(self, name: str) -> None: ...
    def end(self, handle: object) -> None: ...
    def tag(self, text: str) -> None: ...


def timed_steps(work, tools, capture: str | None, depth: int, steps: int) -> list[dict]:
    calls = None if work.device.type == "cuda" else NoCalls()
    ranges = install_module_ranges(work.model, depth, capture, calls) if capture else None
    try:
        records = []
        for _ in range(steps):
            records.append(run_step(work, tools))
            if ranges:
                ranges.end_step()
        return records
    finally:
        if ranges:
            ranges.remove()


def measure(work, depth: int, rounds: int, steps: int) -> dict[str, list[list[dict]]]:
    """Per variant, per round, the step records."""
    tools = StepInstruments(work.device)
    names = list(VARIANTS)
    for name in names:  # warm-up every path (first hooked steps allocate the hook nodes' buffers)
        timed_steps(work, tools, VARIANTS[name], depth, 3)
    samples: dict[str, list[list[dict]]] = {name: [] for name in names}
    for index in range(rounds):
        for name in names[index % len(names):] + names[:index % len(names)]:
            samples[name].append(timed_steps(work, tools, VARIANTS[name], depth, steps))
    return samples


def _median(records: list[dict], key: str) -> float:
    return statistics.median(r["wall_ms"] if key == "step" else r["phases_ms"][key] for r in records)


def report(samples: dict[str, list[list[dict]]]) -> None:
    print("| variant | step ms median | p10–p90 | forward ms | backward ms | step vs off | per-round range |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    off_rounds = [_median(records, "step") for records in samples["off"]]
    off = _median([record for records in samples["off"] for record in records], "step")
    for name, rounds in samples.items():
        every = [record for records in rounds for record in records]
        walls = sorted(record["wall_ms"] for record in every)
        deciles = statistics.quantiles(walls, n=10) if len(walls) > 1 else walls * 9
        ratios = [_median(records, "step") / off_round for records, off_round in zip(rounds, off_rounds)]
        ratio = _median(every, "step") / off
        print(f"| {name} | {_median(every, 'step'):.3f} | {deciles[0]:.3f}–{deciles[-1]:.3f} | "
              f"{_median(every, 'forward'):.3f} | {_median(every, 'backward'):.3f} | ×{ratio:.3f} | "
              f"×{min(ratios):.3f}–×{max(ratios):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small")
    parser.add_argument("--model-factory", help="time the user's model: FILE.py:callable or module:callable")
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--depth", type=int, default=3, help="--nvtx-modules depth")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20, help="steps per variant per round")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cuda", "cpu"))
    args = parser.parse_args()
    cfg = RunConfig(model=args.model, model_factory=args.model_factory, dtype=args.dtype, ctx=args.ctx,
                    batch=args.batch, device=args.device, mode="train")
    work = build_workload(cfg, torch.device(args.device))
    hooked = len(hooked_modules(work.model, args.depth))
    device = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"# {device} · torch {torch.__version__} · {time.strftime('%Y-%m-%d')} · "
          f"{args.model_factory or args.model} ({args.model} dims), batch {args.batch}, ctx {args.ctx}, train, "
          f"{args.dtype} · depth {args.depth}: {hooked} hooked modules · {args.rounds}×{args.steps} steps per variant, "
          "interleaved\n")
    report(measure(work, args.depth, args.rounds, args.steps))


if __name__ == "__main__":
    main()
