"""Attention microbenchmark cells (runner side; imports torch): `python -m profiler_core.attention_bench`.

Batch 8, no head dimension: Q, K, V of shape (B, T, d). Per cell: `iters` timed forwards (synchronized each),
the memory in use before backward (what the forward saved), `iters` timed backwards. Implementations: eager
(the naive causal attention that materializes T×T scores), compiled (torch.compile of it), sdpa
(F.scaled_dot_product_attention, is_causal). Prints one JSON line per cell; stops at the first OOM so the
driver starts a fresh process for the rest (recovering from an OOM in process leaks memory).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F
from einops import einsum

from profiler_core.events import CELL_RESULT, CONFIG, FAILED, OK, OOM, emit

IMPLEMENTATIONS = ("eager", "compiled", "sdpa")


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = einsum(q, k, "b q d, b k d -> b q k") / math.sqrt(q.shape[-1])  # (B, T, T)
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    return einsum(probs, v, "b q k, b k d -> b q d")


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # A singleton head dimension: the fused kernels take only 4-D inputs, and with 3-D ones SDPA silently
    # falls back to the math backend, which materializes T×T like the naive version (measured on the H200).
    out = F.scaled_dot_product_attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), is_causal=True)
    return out.squeeze(1)


def implementation(name: str):
    return {"eager": naive_attention, "compiled": torch.compile(naive_attention), "sdpa": sdpa}[name]


def _timed_ms(fn, iters: int) -> list[float]:
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def measure_cell(attend, batch: int, seq: int, d: int, iters: int, dtype: torch.dtype) -> dict:
    q, k, v = (torch.randn(batch, seq, d, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    for _ in range(3):  # warm-up (and compilation for the compiled implementation)
        attend(q, k, v).sum().backward()
        with torch.no_grad():  # a separate graph for torch.compile: compile it here, not in the timed loop
            attend(q, k, v)
    torch.cuda.synchronize()
    with torch.no_grad():
        forward_ms = _timed_ms(lambda: attend(q, k, v), iters)
    inputs_bytes = torch.cuda.memory_allocated()
    out = attend(q, k, v)
    torch.cuda.synchronize()
    saved_bytes = torch.cuda.memory_allocated() - inputs_bytes - out.numel() * out.element_size()
    grad_out = torch.ones_like(out)
    backward_ms = []
    for _ in range(iters):
        out = attend(q, k, v)
        backward_ms += _timed_ms(lambda out=out: out.backward(grad_out), 1)  # this iteration's graph
    return {"forward_ms": forward_ms, "backward_ms": backward_ms, "saved_bytes": saved_bytes,
            "peak_bytes": torch.cuda.max_memory_allocated()}


def run_cells(cells: list[dict], batch: int, iters: int, dtype: torch.dtype) -> int:
    for cell in cells:
        torch.cuda.reset_peak_memory_stats()
        try:
            result = measure_cell(implementation(cell["impl"]), batch, cell["seq"], cell["d"], iters, dtype)
        except torch.OutOfMemoryError as exc:
            emit(CELL_RESULT, **cell, status=OOM, message=str(exc).splitlines()[0],
                 peak_bytes=torch.cuda.max_memory_allocated())
            return 3
        emit(CELL_RESULT, **cell, status=OK, **result)
        torch.cuda.empty_cache()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="profiler_core.runner.attention_bench")
    parser.add_argument("--cells-json", required=True, help='[{"impl": "eager", "d": 16, "seq": 256}, ...]')
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        emit(FAILED, kind=CONFIG, message="the attention benchmark needs a CUDA GPU")
        return 2
    dtype = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    return run_cells(json.loads(args.cells_json), args.batch, args.iters, dtype)


if __name__ == "__main__":
    sys.exit(main())
