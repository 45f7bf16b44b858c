"""AdamW as CS336 assignment 1 writes it: a Python loop over the parameters, one update at a time.

Decoupled weight decay (Loshchilov & Hutter): the step moves each parameter by the bias-corrected Adam direction,
then shrinks it by lr * weight_decay. No foreach or fused kernels: every parameter costs a handful of small ops,
which is what the optimizer phase of a profile shows.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch


class AdamW(torch.optim.Optimizer):
    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"lr, eps and weight_decay must be non-negative; got {lr}, {eps}, {weight_decay}")
        if not all(0 <= beta < 1 for beta in betas):
            raise ValueError(f"betas must lie in [0, 1); got {betas}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        _update(p, self.state[p], group)
        return loss


def _update(p: torch.Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One AdamW step of one parameter; state holds t, m (first moment) and v (second moment)."""
    if not state:
        state.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
    beta1, beta2 = group["betas"]
    state["t"] += 1
    t, m, v, grad = state["t"], state["m"], state["v"], p.grad
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
    p.addcdiv_(m, v.sqrt().add_(group["eps"]), value=-step_size)
    p.mul_(1 - group["lr"] * group["weight_decay"])
