"""AdamW's step alone on the built-in model's parameters: torch's fused and foreach kernels against the foreach
step compiled by torch.compile (PyTorch's "compiling the optimizer" recipe), and what HBM bandwidth allows.

    python3 -m benchmarks.studies.optimizer_step [--model 2.7B] [--rounds 5] [--steps 10]

The variants are interleaved round by round in one process, each with its own optimizer over the same parameters
and gradients; each round times `steps` steps with CUDA events after 3 warm-up steps (the compiled variant
compiles in its first warm-up). One JSON line per round and variant, then per variant the median over rounds of the
per-round medians, the min–max, and the bandwidth: an fp32 AdamW step reads parameter, gradient and both moments
and writes parameter and both moments, 28 bytes per parameter.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from sysprof.models.presets import PRESETS
from sysprof.models.transformer import TransformerLM

BYTES_PER_PARAMETER = 28


def make_step(variant: str, params: list[torch.nn.Parameter]):
    if variant == "fused":
        optimizer = torch.optim.AdamW(params, lr=1e-4, fused=True)
        return optimizer.step
    optimizer = torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if variant == "foreach":
        return optimizer.step
    return torch.compile(optimizer.step, fullgraph=False)


def time_steps(step, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="2.7B")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--variants", default="fused,foreach,compiled-foreach")
    args = parser.parse_args()
    with torch.device("cuda"):
        model = TransformerLM(PRESETS[args.model], 512, "sdpa")
    params = list(model.parameters())
    for p in params:
        p.grad = torch.randn_like(p)
    n = sum(p.numel() for p in params)
    variants = args.variants.split(",")
    steps = {}
    for variant in variants:
        started = time.perf_counter()
        steps[variant] = make_step(variant, params)
        time_steps(steps[variant], 3)
        print(json.dumps({"variant": variant, "warmup_s": round(time.perf_counter() - started, 1)}), flush=True)
    medians: dict[str, list[float]] = {v: [] for v in variants}
    for round_ in range(args.rounds):
        for variant in variants:
            times = time_steps(steps[variant], args.steps)
            medians[variant].append(statistics.median(times))
            print(json.dumps({"round": round_, "variant": variant, "median_ms": round(medians[variant][-1], 3)}),
                  flush=True)
    for variant, values in medians.items():
        median = statistics.median(values)
        print(json.dumps({"variant": variant, "params": n, "median_ms": round(median, 3),
                          "min_ms": round(min(values), 3), "max_ms": round(max(values), 3),
                          "tb_per_s": round(n * BYTES_PER_PARAMETER / median / 1e9, 2),
                          "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
