"""For tests: user models that are wrong in ways the runner must name before any kernel runs."""
from __future__ import annotations

import torch
from torch import nn


class ByteLM(nn.Module):
    """A byte-level model: its vocabulary (256) is fixed inside, whatever the tool's dims say."""

    def __init__(self, n_embd: int):
        super().__init__()
        self.embed = nn.Embedding(256, n_embd)
        self.head = nn.Linear(n_embd, 256)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(idx))


def pinned_to_cpu(n_embd: int) -> nn.Module:
    """A model that puts itself on the CPU, wherever the run is."""
    return ByteLM(n_embd).to("cpu")
