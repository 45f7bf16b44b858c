"""Predicted against measured peak memory, every preset × ctx × dtype × attention (GPU).

Each config is built with the tool's own workload (build_workload) and stepped with its own instruments (run_step):
the first step allocates AdamW's state, the second is the one measured. Measured: the per-phase peaks of
torch.cuda's allocated bytes, their maximum (the run's peak), and the memory in use when backward starts.
Predicted: profiler_core.memory.accounting.predict_run_memory, the figure Configure and `sysprof run` show.
One process for all configs (allocated bytes do not depend on what ran before; the cache is emptied between).

Usage (GPU): python3 -m benchmarks.memory.prediction [--models ...] [--ctxs 128,256,512] [--modes train] [--batch 4]
             [--json F]
"""
from __future__ import annotations

import argparse
import gc
import itertools
import json
import sys

import torch

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.runner.timing import StepInstruments, run_step
from sysprof.profiler_core.runner.workload import build_workload

GIB = 2**30


def measure(cfg: RunConfig) -> dict:
    device = torch.device("cuda")
    work = tools = None
    try:
        work = build_workload(cfg, device)
        tools = StepInstruments(device)
        run_step(work, tools)  # the first step: AdamW's state is allocated here
        record = run_step(work, tools)
        peaks = record["peak_allocated_bytes"]
        return {"status": "ok", "peak_bytes": max(peaks.values()), "phase_peaks": peaks,
                "before_backward_bytes": record["memory_before_backward_bytes"]}
    except torch.OutOfMemoryError:
        return {"status": "oom"}
    finally:
        del work, tools
        gc.collect()
        torch.cuda.empty_cache()


def row(model: str, ctx: int, dtype: str, attention: str, mode: str, batch: int) -> dict:
    cfg = RunConfig(model=model, ctx=ctx, dtype=dtype, attention=attention, mode=mode, batch=batch, device="cuda")
    predicted = predict_run_memory(cfg)
    measured = measure(cfg)
    peak = measured.get("peak_bytes")
    error = (predicted["peak_bytes"] - peak) / peak if peak and "peak_bytes" in predicted else None
    return {"model": model, "ctx": ctx, "batch": batch, "dtype": dtype, "attention": attention, "mode": mode,
            **measured, "predicted": predicted, "error": error}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="small,medium,large,xl,2.7B")
    parser.add_argument("--ctxs", default="128,256,512")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--attentions", default="naive,sdpa")
    parser.add_argument("--modes", default="train")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--json", help="write every row here as JSON lines")
    args = parser.parse_args()
    out = open(args.json, "w") if args.json else None  # noqa: SIM115  # kept open while rows come
    print(f"{'model':>6} {'ctx':>4} {'dtype':>5} {'attn':>5} {'mode':>16}  measured GiB  predicted GiB  error")
    for model, ctx, dtype, attention, mode in itertools.product(
            args.models.split(","), map(int, args.ctxs.split(",")), args.dtypes.split(","),
            args.attentions.split(","), args.modes.split(",")):
        result = row(model, ctx, dtype, attention, mode, args.batch)
        measured = f"{result['peak_bytes'] / GIB:12.3f}" if result.get("peak_bytes") else f"{result['status']:>12}"
        predicted = result["predicted"].get("peak_bytes")
        predicted_text = f"{predicted / GIB:13.3f}" if predicted else f"{'—':>13}"
        error = f"{result['error']:+.1%}" if result["error"] is not None else "—"
        print(f"{model:>6} {ctx:>4} {dtype:>5} {attention:>5} {mode:>16}  {measured}  {predicted_text}  {error}",
              flush=True)
        if out:
            out.write(json.dumps(result) + "\n")
            out.flush()
    return None


if __name__ == "__main__":
    sys.exit(main())
