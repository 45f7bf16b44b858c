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
process for the rest (recovering from an OOM in process leaks memory). The implementations themselves are in
attention_impls.py; how they are timed and their memory counted is here.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial

import torch

from sysprof.profiler_core.base.events import CELL_RESULT, CONFIG, FAILED, OK, OOM, emit
from sysprof.profiler_core.runner.attention_impls import PARTS, LayerFactory, attention_parts, implementation
from sysprof.profiler_core.runner.timing import synchronize


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

    _warm_up(forward, inputs, layer)
    warm_peak = memory.peak()
    with torch.no_grad():
        forward_ms = _timed_ms(clock, forward, iters)
        parts = _part_times(clock, forward, iters) if cell["impl"] == "eager" else None
    synchronize(device)
    figures, grad_out = _memory_around_backward(forward, memory, device)
    backward_ms = _backward_ms(clock, forward, grad_out, iters)
    peaks = [p for p in (warm_peak, figures["forward_peak_bytes"], figures["backward_peak_bytes"], memory.peak())
             if p is not None]
    return {"forward_ms": forward_ms, "backward_ms": backward_ms, "parts_ms": parts, **figures,
            "peak_bytes": max(peaks) if peaks else None,
            "weights_bytes": None if layer is None else sum(p.numel() * p.element_size() for p in layer.parameters())}


def _warm_up(forward: Callable[..., torch.Tensor], inputs: list[torch.Tensor], layer: torch.nn.Module | None) -> None:
    for _ in range(3):  # warm-up (and compilation for the compiled implementation)
        forward().float().sum().backward()
        with torch.no_grad():  # a separate graph for torch.compile: compile it here, not in the timed loop
            forward()
    for tensor in inputs:
        tensor.grad = None
    if layer is not None:
        layer.zero_grad(set_to_none=True)


def _memory_around_backward(forward: Callable[..., torch.Tensor], memory: Memory,
                            device: torch.device) -> tuple[dict[str, int | None], torch.Tensor]:
    """The memory before one forward, before its backward, after it and at each one's peak; with the gradient given
    to its output, which the timed backwards take too. Its graph is gone once this returns."""
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
    output_bytes = grad_out.numel() * grad_out.element_size()
    return {"saved_bytes": None if inputs_bytes is None or before_backward is None
            else before_backward - inputs_bytes - output_bytes,
            "inputs_bytes": inputs_bytes, "before_backward_bytes": before_backward,
            "forward_peak_bytes": forward_peak, "backward_peak_bytes": backward_peak,
            "after_backward_bytes": after_backward}, grad_out


def _backward_ms(clock: Clock, forward: Callable[..., torch.Tensor], grad_out: torch.Tensor, iters: int) -> list[float]:
    backward_ms: list[float] = []
    for _ in range(iters):
        graph = forward()  # this iteration's graph, used once by its backward
        backward_ms += _timed_ms(clock, partial(graph.backward, grad_out), 1)
    return backward_ms


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
