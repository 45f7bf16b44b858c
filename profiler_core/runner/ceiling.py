"""The matmul ceiling of a config: its step's matrix multiplications timed alone on this device.
`python -m sysprof.profiler_core.runner.ceiling --config-json JSON` prints one JSON object (ceiling_record).

One forward and backward of the model on the meta device (no memory, no kernels) records every matmul the step
makes (mm, addmm, bmm, baddbmm: the linear layers' and, where attention runs as the math path, its own), with the
operands' shapes and whether each is transposed. Each distinct one is then run alone with random operands in the
config's compute dtype (bf16/fp16 where the config computes in them, else fp32 at its matmul precision) and timed:
the step's matmuls at the speed this device runs them back to back, with nothing else in the step. Their FLOPs
over that time, over the device's peak, is the MFU the step would reach if it were nothing but its matmuls: a
ceiling a run's MFU can approach but not pass by changing anything but the matmuls' shapes or precision.

Fused attention kernels (flash, memory-efficient) are not matmuls here: on the meta device attention runs as its
math path, whose batched matmuls stand in for them, with the same FLOPs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sysprof.profiler_core.analysis.peaks import matmul_precision_used, peak_tflops
from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.runner.meta_model import build_on_meta, meta_batch
from sysprof.profiler_core.runner.user_model import load_callable
from sysprof.profiler_core.runner.workload import loss_of, resolve_device

aten = torch.ops.aten
# op → (index of the first operand, batched): addmm and baddbmm carry the added term first
MATMULS = {aten.mm: (0, False), aten.addmm: (1, False), aten.bmm: (0, True), aten.baddbmm: (1, True)}
# fp8 runs' matmuls are timed in bf16: the ceiling is then bf16's, which an fp8 step may pass (said in its table)
HALF = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.bfloat16}
TIMED_SECONDS = 0.01  # each timing repeats one matmul for at least this long: one launch alone is mostly overhead
TIMINGS = 5


def _transposed(tensor: torch.Tensor) -> bool:
    return not tensor.is_contiguous() and tensor.transpose(-2, -1).is_contiguous()


class MatmulShapes(TorchDispatchMode):
    """Counts each distinct matmul: (batch, m, k, n, a transposed, b transposed)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[tuple[int, int, int, int, bool, bool]] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        found = MATMULS.get(func.overloadpacket)
        if found:
            a, b = args[found[0]], args[found[0] + 1]
            batch = a.shape[0] if found[1] else 1
            self.seen[(batch, a.shape[-2], a.shape[-1], b.shape[-1], _transposed(a), _transposed(b))] += 1
        return func(*args, **(kwargs or {}))


def step_matmuls(cfg: RunConfig) -> Counter:
    """The matmuls of one step of the config (forward, and backward unless the mode is forward), on meta."""
    model = build_on_meta(cfg)[0]
    if cfg.mode == "forward":
        model.requires_grad_(False)
    loss_fn = load_callable(cfg.loss, "--loss")[0] if cfg.loss else None
    tokens, targets = meta_batch(cfg)
    with MatmulShapes() as shapes:
        loss = loss_of(model(tokens), targets, loss_fn, cfg.model_factory is not None)
        if cfg.mode != "forward":
            loss.backward()
    return shapes.seen


def _operand(batch: int, rows: int, cols: int, transposed: bool, dtype, device) -> torch.Tensor:
    shape = (batch, cols, rows) if transposed else (batch, rows, cols)
    tensor = torch.randn(shape, dtype=dtype, device=device)
    tensor = tensor.transpose(-2, -1) if transposed else tensor
    return tensor if batch > 1 else tensor[0]


def _seconds_of(call: Callable[[], Any], device: torch.device) -> float:
    """One call's time: repeated for TIMED_SECONDS or more, TIMINGS times; the median."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    call(), call()
    sync()
    started = time.perf_counter()
    call()
    sync()
    reps = max(1, int(TIMED_SECONDS / max(time.perf_counter() - started, 1e-7)))
    timings = []
    for _ in range(TIMINGS):
        started = time.perf_counter()
        for _ in range(reps):
            call()
        sync()
        timings.append((time.perf_counter() - started) / reps)
    return statistics.median(timings)


def time_matmul(key: tuple, dtype, device: torch.device) -> float:
    batch, m, k, n, a_t, b_t = key
    a, b = _operand(batch, m, k, a_t, dtype, device), _operand(batch, k, n, b_t, dtype, device)
    return _seconds_of(lambda: torch.matmul(a, b), device)


def ceiling_record(cfg: RunConfig) -> dict[str, Any]:
    device = resolve_device(cfg.device)
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    dtype = HALF.get(cfg.dtype, torch.float32)
    rows = []
    for key, count in step_matmuls(cfg).most_common():
        seconds = time_matmul(key, dtype, device)
        batch, m, k, n = key[:4]
        rows.append({"batch": batch, "m": m, "k": k, "n": n, "transposed": [key[4], key[5]], "count": count,
                     "ms": seconds * 1e3, "tflops": 2 * batch * m * k * n / seconds / 1e12})
    return _summed(cfg, device, rows)


def _summed(cfg: RunConfig, device: torch.device, rows: list[dict]) -> dict[str, Any]:
    flops = sum(2 * r["batch"] * r["m"] * r["k"] * r["n"] * r["count"] for r in rows)
    seconds = sum(r["ms"] * r["count"] for r in rows) / 1e3
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    precision = matmul_precision_used(cfg.dtype, cfg.matmul_precision)
    peak = peak_tflops(name, precision) if name else None
    tflops = flops / seconds / 1e12 if seconds else None
    return {"device": name or device.type, "precision": precision, "peak_tflops": peak, "matmuls": rows,
            "flops_per_step": flops, "ms_per_step": seconds * 1e3, "tflops": tflops,
            "mfu": tflops / peak if tflops and peak else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner.ceiling")
    parser.add_argument("--config-json", required=True, help="the config, as RunConfig.to_dict() writes it")
    args = parser.parse_args(argv)
    try:
        cfg = validate(RunConfig.from_dict(json.loads(args.config_json)), locate_code=False)
        record = ceiling_record(cfg)
    except Exception as exc:  # noqa: BLE001  the user's model may raise anything: its traceback goes to stderr
        if not isinstance(exc, ConfigError):
            traceback.print_exc()
        print(json.dumps({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}))
        return 1
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
