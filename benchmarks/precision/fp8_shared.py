"""bf16 against FP8 linear layers (torchao), arms of the same shared processes (blocks interleaved, the arms' order
reversed every other process), on any preset: tokens/s and MFU (FP8 counted against the bf16 peak) per process.

    python3 -m benchmarks.precision.fp8_shared OUT_DIR --model 2.7B --ctx 256 --batch 16 --processes 2
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session.arms import run_shared


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="2.7B")
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    base = RunConfig(model=args.model, ctx=args.ctx, batch=args.batch, dtype="bf16", attention="sdpa", compile=True,
                     compile_mode="reduce-overhead", optimizer_impl="fused", warmup=3, steps=12, device="cuda")
    arms = [base, dataclasses.replace(base, dtype="fp8")]
    rows = []
    for process in range(args.processes):
        order = arms if process % 2 == 0 else arms[::-1]
        folder = args.out / f"process{process}"
        summaries = run_shared([(cfg, folder / cfg.dtype) for cfg in order], folder / "shared")
        for cfg, summary in zip(order, summaries):
            rows.append({"process": process, "dtype": cfg.dtype, "status": summary.get("status"),
                         "tokens_per_s": summary.get("tokens_per_s"), "mfu": summary.get("mfu"),
                         "step_ms": ((summary.get("phases") or {}).get("step") or {}).get("median_ms"),
                         "compile_s": summary.get("compile_s"), "error": summary.get("error")})
            print(json.dumps(rows[-1]), flush=True)
    (args.out / "fp8_shared.json").write_text(json.dumps({"config": base.to_dict(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
