"""`--dtype fp8`: bf16 autocast, with the linear layers' matmuls in FP8 through torchao's float8 training (dynamic
tensorwise scaling: each matmul's inputs scaled to FP8 on the fly, the weights kept in their own dtype).

torchao swaps `torch.nn.Linear` layers. The built-in model's own Linear (a weight and F.linear) is swapped to a
`torch.nn.Linear` holding the same weight first; a user's model whose linear layers are a class of its own has
nothing torchao can swap, and is refused in one line rather than run as bf16 under the name fp8. Layers whose
dims are not multiples of 16 (FP8 tensor cores' tile) stay in bf16.
"""
from __future__ import annotations

import importlib.util

import torch
from torch import nn

from sysprof.models.transformer import Linear as BuiltInLinear
from sysprof.profiler_core.base.config import FP8_MIN_CAPABILITY
from sysprof.profiler_core.base.errors import ConfigError

TILE = 16


def check_fp8_support(device: torch.device) -> None:
    """Refuse --dtype fp8 where it cannot run, before anything is built."""
    if device.type != "cuda":
        raise ConfigError(f"--dtype fp8 needs a CUDA GPU with FP8 tensor cores; device {device.type} has none")
    capability = torch.cuda.get_device_capability(device)
    if capability < FP8_MIN_CAPABILITY:
        raise ConfigError(f"--dtype fp8 needs FP8 tensor cores (compute capability 8.9 or more: H100, H200, L4, "
                          f"RTX 40xx); {torch.cuda.get_device_name(device)} is {capability[0]}.{capability[1]}")
    if importlib.util.find_spec("torchao") is None:
        raise ConfigError("--dtype fp8 runs through torchao's float8 training, which is not installed: "
                          "pip install torchao")


def to_float8(model: nn.Module) -> dict[str, int]:
    """Swap the model's linear layers for torchao's Float8Linear, in place; what was swapped and what was not."""
    _as_torch_linears(model)
    linears = [module for module in model.modules() if isinstance(module, nn.Linear)]
    swapped = sum(_fits(module) for module in linears)
    if not swapped:
        raise ConfigError("--dtype fp8: the model has no torch.nn.Linear layer with both dims multiples of 16 "
                          "(torchao swaps torch.nn.Linear only; a Linear class of the model's own is not one)")
    from torchao.float8 import convert_to_float8_training  # check_fp8_support found it

    convert_to_float8_training(model, module_filter_fn=lambda module, _name: _fits(module))
    return {"fp8_linear_layers": swapped, "bf16_linear_layers": len(linears) - swapped}


def _fits(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) and module.in_features % TILE == 0 and module.out_features % TILE == 0


def _as_torch_linears(model: nn.Module) -> None:
    """Each built-in Linear replaced by a torch.nn.Linear holding the same weight (so the optimizer's parameters,
    built after, are the same tensors)."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, BuiltInLinear):
                d_out, d_in = child.weight.shape
                swapped = nn.Linear(d_in, d_out, bias=False, device="meta")
                swapped.weight = child.weight
                setattr(parent, name, swapped)
