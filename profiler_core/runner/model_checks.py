"""What a user's model must agree with before its first step: the run's device, and the token ids' range.

Both mistakes would otherwise surface late and badly: a model on the wrong device as a RuntimeError deep in its
forward, token ids beyond its embedding as a CUDA device-side assert that poisons the whole process.
"""
from __future__ import annotations

import torch

from sysprof.profiler_core.base.errors import ConfigError


def check_placement(model: torch.nn.Module, device: torch.device) -> None:
    elsewhere = sorted({str(t.device) for t in (*model.parameters(), *model.buffers())
                        if t.device.type != device.type})
    if elsewhere:
        raise ConfigError(f"the model's tensors are on {', '.join(elsewhere)} but the run is on {device.type}: "
                          "let the factory build on the current default device (no fixed device= or .to())")


def check_vocabulary(model: torch.nn.Module, vocab: int) -> None:
    """The first embedding (the token table: nanoGPT's wte, Hugging Face's embed_tokens) must cover the ids."""
    embedding = next((m for m in model.modules() if isinstance(m, torch.nn.Embedding)), None)
    if embedding is not None and embedding.num_embeddings < vocab:
        raise ConfigError(f"the model's token embedding has {embedding.num_embeddings} rows but token ids go up to "
                          f"{vocab - 1}: set --vocab {embedding.num_embeddings} (or the factory's vocabulary "
                          "argument with --model-arg)")
