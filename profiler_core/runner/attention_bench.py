"""Attention microbenchmark cells (runner side; imports torch):
`python -m sysprof.profiler_core.runner.attention_bench`.

Batch 8, no head dimension: Q, K, V of shape (B, T, d). Per cell: `iters` timed forwards, the memory around the
forward and backward (the handout's "memory in use before backward" among them), `iters` timed backwards, and for
the eager implementation the time of each part of the forward (scores, scale+mask, softmax, output) so its FLOPs
can be set against its time. Implementations: eager (the naive causal attention that materializes T×T scores),
compiled (torch.compile of it), sdpa (F.scaled_dot_product_attention, is_causal), the user's function of q, k,
v, and the user's layer (built per cell, run on x of shape (B, T, d)). bf16 runs under autocast with
fp32 inputs, as users run it (the softmax then stays fp32). Timing: CUDA events on CUDA, the host clock after a
device synchronize elsewhere. Prints one JSON line per cell; stops at the first OOM so the driver starts a fresh
process for the rest (recovering from an OOM in process leaks memory).
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import cast

import torch
import torch.nn.functional as F
from einops import einsum

from sysprof.profiler_core.base.code_specs import COMPILED_PREFIX
from sysprof.profiler_core.base.events import CELL_RESULT, CONFIG, FAILED, OK, OOM, emit
from sysprof.profiler_core.runner.timing import synchronize
from sysprof.profiler_core.runner.user_model import DIMENSION_NAMES, ROPE_THETA, factory_kwargs, load_callable

PARTS = ("scores", "scale_mask", "softmax", "output")  # the eager forward, in order


def attention_parts(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mark: Callable[[], None]) -> torch.Tensor:
    """The naive causal attention; `mark` is called after each part (a no-op when not timing the parts)."""
    scores = einsum(q, k, "b q d, b k d -> b q k")  # (B, T, T)
    mark()
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    scores = (scores / math.sqrt(q.shape[-1])).masked_fill(~causal, float("-inf"))
    mark()
    probs = torch.softmax(scores, dim=-1)
    mark()
    out = einsum(probs, v, "b q k, b k d -> b q d")
    mark()
    return out


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return attention_parts(q, k, v, lambda: None)


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # A singleton head dimension: the fused kernels take only 4-D inputs, and with 3-D ones SDPA silently
    # falls back to the math backend, which materializes T×T like the naive version (measured on the H200).
    out = F.scaled_dot_product_attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), is_causal=True)
    return out.squeeze(1)


@dataclass(frozen=True)
class LayerFactory:
    """The user's attention *layer* (`file.py:Factory`): built per cell with d_model = d, one head and the context
    length, then run on x of shape (B, T, d); its projections' weights and their gradients are in the memory."""
    factory: Callable[..., torch.nn.Module]
    spec: str
    compiled: bool

    def build(self, cell: dict, device: torch.device) -> torch.nn.Module:
        dimensions = {"d_model": cell["d"], "num_heads": 1, "context_length": cell["seq"], "rope_theta": ROPE_THETA}
        kwargs = factory_kwargs(self.factory, dimensions, {}, self.spec, "--impl",
                                "give them defaults (the study fills d_model, the heads and the context length)")
        if "device" in inspect.signature(self.factory).parameters:
            kwargs["device"] = device
        layer = self.factory(**kwargs).to(device)
        return cast(torch.nn.Module, torch.compile(layer)) if self.compiled else layer


def is_layer_factory(found: Callable[..., object]) -> bool:
    """A module class, or a function whose parameters name a model dimension (d_model, num_heads, …): a layer to
    build; anything else is an attention function of q, k, v."""
    if inspect.isclass(found):
        return issubclass(found, torch.nn.Module)
    try:
        parameters = inspect.signature(found).parameters
    except (TypeError, ValueError):
        return False
    return any(name in parameters for dim in ("d_model", "num_heads") for name in DIMENSION_NAMES[dim])


def implementation(name: str) -> Callable[..., torch.Tensor] | LayerFactory:
    """A built-in implementation, or the user's function or layer (`file.py:fn`, `module:fn`; `compiled:` before
    it)."""
    if name == "eager":
        return naive_attention
    if name == "compiled":
        return torch.compile(naive_attention)
    if name == "sdpa":
        return sdpa
    spec = name.removeprefix(COMPILED_PREFIX)
    found = load_callable(spec, "--impl")[0]
    if is_layer_factory(found):
        return LayerFactory(found, spec, name.startswith(COMPILED_PREFIX))
    attend = with_causal_mask(found)
    return torch.compile(attend) if name.startswith(COMPILED_PREFIX) else attend


def with_causal_mask(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """fn as (q, k, v) → output: a function that takes a fourth parameter (or one named mask) gets the causal mask,
    a (T, T) bool tensor, True where a query may attend (made in each call, as the eager version makes its own)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: called with q, k, v
        return fn
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 4 and not any(p.name == "mask" for p in parameters):
        return fn

    def masked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        return fn(q, k, v, causal) if len(positional) >= 4 else fn(q, k, v, mask=causal)
    return masked


class Clock:
    """Marks on the device's timeline: CUDA events (no host sync between marks), else the host clock after a
    synchronize (CPU work is synchronous; MPS is synchronized at each mark)."""

    def __init__(self, device: torch.device):
        self.device, self.on_cuda = device, device.type == "cuda"
        self.marks: list = []

    def mark(self) -> None:
        if self.on_cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            synchronize(self.device)
            self.marks.append(time.perf_counter())

    def intervals_ms(self) -> list[float]:
        """The time between consecutive marks; clears them."""
        synchronize(self.device)
        marks, self.marks = self.marks, []
        if self.on_cuda:
            return [a.elapsed_time(b) for a, b in zip(marks, marks[1:])]
        return [(b - a) * 1e3 for a, b in zip(marks, marks[1:])]


class Memory:
    """The allocator's counters where the device has them: CUDA all, MPS the current allocation, CPU none."""

    def __init__(self, device: torch.device):
        self.kind = device.type

    def reset_peak(self) -> None:
        if self.kind == "cuda":
            torch.cuda.reset_peak_memory_stats()

    def allocated(self) -> int | None:
        if self.kind == "cuda":
            return torch.cuda.memory_allocated()
        return torch.mps.current_allocated_memory() if self.kind == "mps" else None

    def peak(self) -> int | None:
        return torch.cuda.max_memory_allocated() if self.kind == "cuda" else None


def _timed_ms(clock: Clock, fn: Callable[[], object], iters: int) -> list[float]:
    times = []
    for _ in range(iters):
        clock.mark()
        fn()
        clock.mark()
        times += clock.intervals_ms()
    return times


def _part_times(clock: Clock, forward: Callable, iters: int) -> dict[str, list[float]]:
    """Each part of the eager forward, `iters` times (the caller holds no_grad, like the timed forwards)."""
    parts: dict[str, list[float]] = {name: [] for name in PARTS}
    def timed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return attention_parts(q, k, v, clock.mark)

    for _ in range(iters):
        clock.mark()
        forward(timed)
        for name, ms in zip(PARTS, clock.intervals_ms()):
            parts[name].append(ms)
    return parts


def measure_cell(attend, cell: dict, batch: int, iters: int, device: torch.device, autocast: bool) -> dict:
    clock, memory = Clock(device), Memory(device)
    layer = attend.build(cell, device) if isinstance(attend, LayerFactory) else None
    inputs = [torch.randn(batch, cell["seq"], cell["d"], device=device, requires_grad=True)
              for _ in range(1 if layer is not None else 3)]  # x for a layer; q, k, v for a function
    attend = layer if layer is not None else attend

    def forward(run=attend):  # forwards under autocast for bf16; backwards outside it, as autocast asks
        with torch.autocast(device.type, dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
            return run(*inputs)

    for _ in range(3):  # warm-up (and compilation for the compiled implementation)
        forward().float().sum().backward()
        with torch.no_grad():  # a separate graph for torch.compile: compile it here, not in the timed loop
            forward()
    for tensor in inputs:
        tensor.grad = None
    if layer is not None:
        layer.zero_grad(set_to_none=True)
    warm_peak = memory.peak()
    with torch.no_grad():
        forward_ms = _timed_ms(clock, forward, iters)
        parts = _part_times(clock, forward, iters) if cell["impl"] == "eager" else None
    synchronize(device)
    inputs_bytes = memory.allocated()
    memory.reset_peak()
    out = forward()
    synchronize(device)
    before_backward, forward_peak = memory.allocated(), memory.peak()
    grad_out = torch.ones_like(out)
    memory.reset_peak()
    out.backward(grad_out)
    synchronize(device)
    after_backward, backward_peak = memory.allocated(), memory.peak()
    del out
    backward_ms: list[float] = []
    for _ in range(iters):
        graph = forward()  # this iteration's graph, used once by its backward
        backward_ms += _timed_ms(clock, partial(graph.backward, grad_out), 1)
    output_bytes = grad_out.numel() * grad_out.element_size()
    peaks = [p for p in (warm_peak, forward_peak, backward_peak, memory.peak()) if p is not None]
    return {"forward_ms": forward_ms, "backward_ms": backward_ms, "parts_ms": parts,
            "saved_bytes": None if inputs_bytes is None or before_backward is None
            else before_backward - inputs_bytes - output_bytes,
            "inputs_bytes": inputs_bytes, "before_backward_bytes": before_backward,
            "forward_peak_bytes": forward_peak, "backward_peak_bytes": backward_peak,
            "after_backward_bytes": after_backward, "peak_bytes": max(peaks) if peaks else None,
            "weights_bytes": None if layer is None else sum(p.numel() * p.element_size() for p in layer.parameters())}


def _is_oom(exc: BaseException) -> bool:
    # MPS reports running out of memory as a RuntimeError with this text, not as torch.OutOfMemoryError.
    return isinstance(exc, torch.OutOfMemoryError) or "MPS backend out of memory" in str(exc)


def run_cells(cells: list[dict], batch: int, iters: int, device: torch.device, autocast: bool) -> int:
    memory = Memory(device)
    for cell in cells:
        memory.reset_peak()
        try:
            result = measure_cell(implementation(cell["impl"]), cell, batch, iters, device, autocast)
        except Exception as exc:  # noqa: BLE001 - any failure is this cell's result; the driver goes on
            if _is_oom(exc):
                emit(CELL_RESULT, **cell, status=OOM, message=str(exc).splitlines()[0], peak_bytes=memory.peak())
                return 3
            traceback.print_exc()  # to the study's stderr.log; the event carries the one-line reason
            emit(FAILED, kind="error", message=f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}")
            return 1
        emit(CELL_RESULT, **cell, status=OK, **result)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


def device_problem(device: str) -> str | None:
    """Why the benchmark cannot run on this device here (None when it can): exactly what is missing."""
    if device == "cuda" and not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch"
    if device == "mps" and not torch.backends.mps.is_built():
        return f"this torch build ({torch.__version__}) has no MPS backend (MPS needs torch for macOS on Apple silicon)"
    if device == "mps" and not torch.backends.mps.is_available():
        return "torch has MPS, but no Metal device is usable here (macOS 12.3 or later on Apple silicon is needed)"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner.attention_bench")
    parser.add_argument("--cells-json", required=True, help='[{"impl": "eager", "d": 16, "seq": 256}, ...]')
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="bf16: autocast, fp32 inputs")
    parser.add_argument("--device", choices=("cuda", "cpu", "mps"), default="cuda")
    args = parser.parse_args(argv)
    problem = device_problem(args.device)
    if problem:
        emit(FAILED, kind=CONFIG, message=f"the attention benchmark cannot run on {args.device}: {problem}")
        return 2
    return run_cells(json.loads(args.cells_json), args.batch, args.iters, torch.device(args.device),
                     autocast=args.dtype == "bf16")


if __name__ == "__main__":
    sys.exit(main())
