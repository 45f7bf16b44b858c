"""`python -m sysprof.profiler_core.runner.inspect_model --config-json JSON [--depth N]`: the model before it runs.

The model is built on the meta device, so nothing is allocated and no kernel runs: parameters (total,
trainable, embedding), a per-module table, forward and training FLOPs counted with torch's FlopCounterMode formulas
over a meta forward and backward, and the bytes one step needs (weights, gradients, optimizer state from a meta
optimizer step, activations saved for backward by the meta forward). It prints one `inspect` event.

User code runs here, in its own process, as in the runner: a factory that fails is a one-line `failed` event
(exit 2 for what the user got wrong before their code ran, 1 for an exception their code raised, whose full
traceback goes to stderr). A model that cannot run on the meta device (it calls .item(), numpy, …) still gets
its parameter and module tables; the FLOPs and activations say why they are missing. The meta build and the
step's counts are meta_model.py's, shared with the runner.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from collections.abc import Iterator
from typing import Any

import torch

from sysprof.models.presets import step_flops
from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import COMPILED_STEP, ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.events import emit
from sysprof.profiler_core.base.records import InspectReport
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.runner.meta_model import META, build_on_meta, count_step, one_line
from sysprof.profiler_core.runner.user_model import build_optimizer

DEFAULT_DEPTH = 3


def parameter_counts(model: torch.nn.Module) -> dict[str, int]:
    """Total, trainable, and the embedding tables' share (the usual "non-embedding" count leaves them out)."""
    total = sum(p.numel() for p in model.parameters())
    embedding = sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters())
    if embedding == 0:  # an Embedding of one's own (the built-in model has one): a module named like one
        embedding = sum(p.numel() for name, m in model.named_modules() if _looks_like_embedding(name, m)
                        for p in m.parameters(recurse=False))
    return {"total": total, "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "embedding": embedding, "non_embedding": total - embedding}


def _looks_like_embedding(name: str, module: torch.nn.Module) -> bool:
    leaf = name.rsplit(".", 1)[-1].lower()
    return "embedding" in type(module).__name__.lower() or leaf in ("wte", "wpe", "embed_tokens", "tok_embeddings")


def module_rows(model: torch.nn.Module, depth: int) -> list[dict[str, Any]]:
    """Modules down to `depth`, with the indices of repeated blocks folded: `layers.*.attn` × 32."""
    total = sum(p.numel() for p in model.parameters()) or 1
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for name, module in model.named_modules():
        parts = name.split(".") if name else []
        if not parts or len(parts) > depth:
            continue
        key = (".".join("*" if part.isdigit() else part for part in parts), type(module).__name__)
        row = rows.setdefault(key, {"name": key[0], "type": key[1], "depth": len(parts), "count": 0, "params": 0})
        row["count"] += 1
        row["params"] += sum(p.numel() for p in module.parameters())
    return [row | {"share": row["params"] / total} for row in rows.values()]


def optimizer_state_bytes(cfg: RunConfig, model: torch.nn.Module) -> int:
    """The state one meta step of the configured optimizer creates (AdamW: exp_avg and exp_avg_sq)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    for parameter in trainable:
        parameter.grad = torch.empty_like(parameter)
    # How the update is computed does not change what it keeps; the loop runs anywhere, fused needs CUDA.
    optimizer, _ = build_optimizer(_with_loop_impl(cfg), trainable)
    optimizer.step()
    return sum(t.numel() * t.element_size() for state in optimizer.state.values() for t in _tensors(state)
               if t.device == META)


def _with_loop_impl(cfg: RunConfig) -> RunConfig:
    keeps_flags = cfg.optimizer_impl in ("default", COMPILED_STEP)  # neither passes a flag to the optimizer
    return dataclasses.replace(cfg, optimizer_impl="default" if keeps_flags else "loop")


def _tensors(state: dict) -> Iterator[torch.Tensor]:
    return (value for value in state.values() if isinstance(value, torch.Tensor))


def inspect_config(cfg: RunConfig, depth: int = DEFAULT_DEPTH) -> InspectReport:
    started = time.perf_counter()
    model, info = build_on_meta(cfg)
    if cfg.mode == "forward":
        model.requires_grad_(False)
    params = parameter_counts(model)
    report = InspectReport(model=cfg.model_name, model_class=type(model).__qualname__, factory=info, params=params,
                           modules=module_rows(model, depth), flops=None, closed_form_flops=None, memory={},
                           residual_stream_per_layer_bytes=predict_run_memory(cfg)["residual_stream_per_layer_bytes"],
                           notes=[], seconds=0.0)
    if cfg.model_factory is None:
        report["closed_form_flops"] = step_flops(cfg.spec(), cfg.batch, cfg.ctx, cfg.mode)
    weights = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    report["memory"] = {"weights_bytes": weights,
                        "gradients_bytes": _trainable_bytes(model) if cfg.mode != "forward" else 0}
    _add_counted(report, cfg, model)
    if cfg.mode == "train":
        _add_optimizer_state(report, cfg, model)
    report["seconds"] = time.perf_counter() - started
    return report


def _trainable_bytes(model: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def _add_counted(report: InspectReport, cfg: RunConfig, model: torch.nn.Module) -> None:
    try:
        counts = count_step(cfg, model)
    except Exception as exc:  # noqa: BLE001  (user code on the meta device: .item(), numpy, data-dependent shapes)
        report["notes"].append(f"FLOPs and activations not counted: the model cannot run on the meta device "
                               f"({one_line(exc)})")
        return
    step = counts["forward"] + (counts["backward"] or 0)
    report["flops"] = {"forward": counts["forward"], "backward": counts["backward"], "step": step}
    report["memory"]["activations_bytes"] = counts["activations_bytes"]
    if cfg.dtype != "fp32" and cfg.mode != "forward":
        report["notes"].append(f"activations are counted in fp32 (autocast does not apply on the meta device); "
                               f"under {cfg.dtype} autocast most saved tensors take half: an upper bound")


def _add_optimizer_state(report: InspectReport, cfg: RunConfig, model: torch.nn.Module) -> None:
    try:
        report["memory"]["optimizer_state_bytes"] = optimizer_state_bytes(cfg, model)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001  (an optimizer that cannot step on the meta device)
        report["notes"].append(f"optimizer state not counted: its step fails on the meta device ({one_line(exc)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sysprof.profiler_core.runner.inspect_model")
    parser.add_argument("--config-json", required=True)
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help="module table depth")
    args = parser.parse_args(argv)
    try:
        cfg = validate(RunConfig.from_dict(json.loads(args.config_json)), locate_code=False)
    except (ConfigError, json.JSONDecodeError, TypeError) as exc:
        emit(events.FAILED, kind=events.CONFIG, message=str(exc))
        return 2
    try:
        report = inspect_config(cfg, args.depth)
    except ConfigError as exc:  # what the user got wrong before their code ran: no such file, a missing argument
        emit(events.FAILED, kind=events.CONFIG, message=str(exc))
        return 2
    except Exception as exc:  # the user's own code raised: one line here, the traceback on stderr
        traceback.print_exc(file=sys.stderr)
        emit(events.FAILED, kind="error", message=one_line(exc))
        return 1
    emit(events.INSPECT, report=report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
