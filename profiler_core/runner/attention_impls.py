"""The attention implementations the attention benchmark (attention_bench.py) compares, as --impl names them.

Built in: eager (the naive causal attention that materializes T×T scores, in parts that can be timed one by one),
compiled (torch.compile of it) and sdpa (F.scaled_dot_product_attention, is_causal). The user's own: a function of
q, k, v (given the causal mask where it takes one), or a layer built per cell. Apart from the timing and the memory
counts: what is measured is chosen here, how it is measured is the benchmark's.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from einops import einsum

from sysprof.profiler_core.base.code_specs import COMPILED_PREFIX
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
