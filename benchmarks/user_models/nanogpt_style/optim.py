"""nanoGPT's `configure_optimizers` as an optimizer class: torch's AdamW over two parameter groups.

Matrices (embeddings and Linear weights, dim >= 2) decay; biases and LayerNorm gains (dim < 2) do not. The groups
are made in __init__ from whatever parameters it is given, so `--optimizer nanogpt_style/optim.py:DecayGroupsAdamW`
gets nanoGPT's choice from `model.parameters()` alone. Other keyword arguments (foreach, fused, …) go to torch.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


def decay_groups(params: Iterable[Any], weight_decay: float) -> list[dict[str, Any]]:
    """Two groups: dim >= 2 with weight_decay, the rest without. Given groups (dicts) pass through unchanged."""
    params = list(params)
    if params and isinstance(params[0], dict):
        return params
    trainable = [p for p in params if p.requires_grad]
    return [{"params": [p for p in trainable if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in trainable if p.dim() < 2], "weight_decay": 0.0}]


class DecayGroupsAdamW(torch.optim.AdamW):
    def __init__(self, params: Iterable[Any], lr: float = 6e-4, betas: tuple[float, float] = (0.9, 0.95),
                 weight_decay: float = 0.1, **kwargs: Any):
        super().__init__(decay_groups(params, weight_decay), lr=lr, betas=tuple(betas), weight_decay=weight_decay,
                         **kwargs)
