"""The mixed-precision lab, computed live (runner side; imports torch):
`python -m sysprof.profiler_core.runner.precision_lab`.

1. Accumulating 0.01 a thousand times in fp32, fp16, and fp32 with fp16 addends (with and without an explicit
   cast): what each sum lands on.
2. The ToyModel under autocast: the dtype of the parameters, fc1's output, LayerNorm's output, the logits, the
   loss and the gradients, for each autocast dtype.
"""
from __future__ import annotations

import argparse
import sys

import torch
from torch import nn

from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.base.events import CONFIG, FAILED, LAB_RESULT, emit
from sysprof.profiler_core.runner.workload import resolve_device


def accumulation_demo() -> list[dict]:
    """The four loops of the seed handout; the sums are the point (exact 10 is unreachable in binary)."""
    def run(accumulator_dtype: torch.dtype, addend_dtype: torch.dtype, cast: bool) -> float:
        total = torch.tensor(0, dtype=accumulator_dtype)
        for _ in range(1000):
            addend = torch.tensor(0.01, dtype=addend_dtype)
            total += addend.type(accumulator_dtype) if cast else addend
        return float(total)

    loops = [("fp32", "fp32", torch.float32, torch.float32, False),
             ("fp16", "fp16", torch.float16, torch.float16, False),
             ("fp32", "fp16", torch.float32, torch.float16, False),
             ("fp32", "fp16 cast to fp32", torch.float32, torch.float16, True)]
    sums = [(acc, add, run(a, b, cast)) for acc, add, a, b, cast in loops]
    return [{"accumulator": acc, "addend": add, "sum": total, "error": total - 10.0} for acc, add, total in sums]


class ToyModel(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, 10, bias=False)
        self.ln = nn.LayerNorm(10)
        self.fc2 = nn.Linear(10, out_features, bias=False)
        self.relu = nn.ReLU()
        self.seen: dict[str, torch.dtype] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.fc1(x)
        self.seen["fc1 output"] = hidden.dtype
        normed = self.ln(self.relu(hidden))
        self.seen["LayerNorm output"] = normed.dtype
        logits = self.fc2(normed)
        self.seen["logits"] = logits.dtype
        return logits


def autocast_dtypes(device: torch.device, autocast_dtype: torch.dtype) -> dict[str, str]:
    torch.manual_seed(0)
    model = ToyModel(16, 4).to(device)
    x, target = torch.randn(8, 16, device=device), torch.randint(4, (8,), device=device)
    with torch.autocast(device.type, dtype=autocast_dtype):
        loss = nn.functional.cross_entropy(model(x), target)
    loss.backward()
    grad = model.fc1.weight.grad
    assert grad is not None  # backward() just filled it
    seen = {"parameters": model.fc1.weight.dtype, **model.seen, "loss": loss.dtype, "gradients": grad.dtype}
    return {name: str(dtype).replace("torch.", "") for name, dtype in seen.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner.precision_lab")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
    except ConfigError as exc:  # --device cuda on a host without one: the user's to fix, said in one line
        emit(FAILED, kind=CONFIG, message=str(exc))
        return 2
    table = {name: autocast_dtypes(device, dtype)
             for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16))}
    emit(LAB_RESULT, device=device.type, torch_version=torch.__version__, accumulation=accumulation_demo(),
         autocast=table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
