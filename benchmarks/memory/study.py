"""The CS336 memory-profiling study, one `sysprof run` per row: peak memory per phase vs the prediction.

Rows: 2.7B and small × ctx 128/256/512 × forward-only / full train step × fp32 / bf16, batch 4.
Forward-only rows run without autograd (torch.no_grad), so no activations are kept for backward: that is
why they peak far below the train rows. Peaks are torch.cuda.max_memory_allocated per phase (reset at each
phase start); "predicted" is weights + gradients + AdamW state + residual stream + attention scores.
Usage (GPU): python3 -m benchmarks.memory.study [--models 2.7B,small] [--ctx 128,256,512]
"""
from __future__ import annotations

import argparse
import time

from benchmarks.harness import run_json
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.memory.accounting import predict_run_memory as memory_prediction

GIB = 2**30


def run_row(model: str, ctx: int, mode: str, dtype: str) -> dict:
    summary = run_json("run", "--model", model, "--ctx", str(ctx), "--mode", mode, "--dtype", dtype, "--batch", "4",
                       "--warmup", "2", "--steps", "3")
    summary.setdefault("peak_memory_bytes", {})  # none printed: the exit code is its status
    return summary


def predicted_bytes(cfg: RunConfig) -> int:
    p = memory_prediction(cfg)
    return sum(p[k] for k in ("parameters_bytes", "gradients_bytes", "optimizer_state_bytes",
                              "residual_stream_all_layers_bytes", "attention_scores_all_layers_bytes"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="2.7B,small")
    parser.add_argument("--ctx", default="128,256,512")
    args = parser.parse_args()
    print("| model | ctx | mode | dtype | status | fwd peak GiB | bwd peak GiB | opt peak GiB | "
          "predicted GiB | residual stream / layer MiB |")
    print("|---|---:|---|---|---|---:|---:|---:|---:|---:|")
    started = time.time()
    for model in args.models.split(","):
        for ctx in map(int, args.ctx.split(",")):
            for mode in ("forward", "train"):
                for dtype in ("fp32", "bf16"):
                    cfg = RunConfig(model=model, ctx=ctx, mode=mode, dtype=dtype, batch=4)
                    summary = run_row(model, ctx, mode, dtype)
                    peaks = summary.get("peak_memory_bytes", {})
                    cells = [f"{peaks[p] / GIB:.2f}" if p in peaks else "—"
                             for p in ("forward", "backward", "optimizer")]
                    residual = memory_prediction(cfg)["residual_stream_per_layer_mib"]
                    print(f"| {model} | {ctx} | {mode} | {dtype} | {summary['status']} | {' | '.join(cells)} | "
                          f"{predicted_bytes(cfg) / GIB:.2f} | {residual:.2f} |", flush=True)
    print(f"\n{time.time() - started:.0f} s in all")


if __name__ == "__main__":
    main()
