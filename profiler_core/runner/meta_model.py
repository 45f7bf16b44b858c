"""The model built on the meta device and one step of it counted there: nothing allocated, no kernel run.

A step's FLOPs (torch's own formulas, over a meta forward and backward) and the bytes autograd saves for backward,
for the inspector (inspect_model.py), for the runner's MFU of a user's model (run_manifest.py) and for the ceiling
(ceiling.py). Apart from the inspector: the runner counts a user's model without loading the inspector's tables.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from sysprof.models.transformer import TransformerLM
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.runner.user_model import build_user_model, load_callable
from sysprof.profiler_core.runner.workload import loss_of

META = torch.device("meta")


def build_on_meta(cfg: RunConfig) -> tuple[torch.nn.Module, dict[str, Any] | None]:
    with META:
        if cfg.model_factory is None:
            return TransformerLM(cfg.spec(), cfg.context_length, cfg.attention), None
        return build_user_model(cfg)


def meta_batch(cfg: RunConfig) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (cfg.batch, cfg.ctx)
    return torch.empty(shape, dtype=torch.long, device=META), torch.empty(shape, dtype=torch.long, device=META)


class FlopCounter(TorchDispatchMode):
    """FlopCounterMode's own formulas (its flop_registry: mm, bmm, addmm, convolutions, SDPA and their
    backwards), applied without FlopCounterMode's decomposition of every op it has no formula for.

    That decomposition turns each elementwise op into prims in Python, which made a 2.7B inspect take seconds;
    matmuls reach this mode already decomposed (linear, einsum, matmul are composite), so the totals are the
    same, which tests/core/test_inspect.py checks against FlopCounterMode itself."""

    def __init__(self) -> None:
        super().__init__()
        self.formulas = FlopCounterMode(display=False).flop_registry
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = self.formulas.get(func._overloadpacket)
        if formula is not None:
            self.total += formula(*args, **kwargs, out_val=out)
        return out


class SavedBytes:
    """Bytes autograd keeps for backward, one count per storage (views of one tensor share it); the model's
    own parameters are weights, counted apart."""

    def __init__(self, model: torch.nn.Module):
        self.parameters = {p.untyped_storage()._cdata for p in model.parameters()}
        self.storages: dict[int, int] = {}

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage._cdata not in self.parameters:
            self.storages[storage._cdata] = storage.nbytes()
        return tensor

    @property
    def total(self) -> int:
        return sum(self.storages.values())


def count_step(cfg: RunConfig, model: torch.nn.Module) -> dict[str, Any]:
    """FLOPs of the forward and the backward (FlopCounterMode), and the bytes saved for backward."""
    loss_fn = load_callable(cfg.loss, "--loss")[0] if cfg.loss else None
    tokens, targets = meta_batch(cfg)
    saved = SavedBytes(model)
    with FlopCounter() as forward:
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda tensor: tensor):
            loss = loss_of(model(tokens), targets, loss_fn, cfg.model_factory is not None)
    counts: dict[str, Any] = {"forward": forward.total, "backward": None,
                              "activations_bytes": saved.total if cfg.mode != "forward" else 0}
    if cfg.mode != "forward":
        with FlopCounter() as backward:
            loss.backward()
        counts["backward"] = backward.total
    return counts


def counted_step_flops(cfg: RunConfig) -> tuple[int | None, str | None]:
    """FLOPs of one step of the user's model, counted on a meta copy (the MFU of a run); None and why not."""
    try:
        model = build_on_meta(cfg)[0]
        if cfg.mode == "forward":
            model.requires_grad_(False)
        counts = count_step(cfg, model)
    except Exception as exc:  # noqa: BLE001  (the real run will show whether the model itself works)
        return None, ("FLOPs not counted, so no TFLOP/s or MFU: the model cannot run on the meta device "
                      f"({one_line(exc)})")
    return counts["forward"] + (counts["backward"] or 0), None


def one_line(exc: BaseException) -> str:
    """An exception as the user reads it in one line: its type and its message's first line."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
