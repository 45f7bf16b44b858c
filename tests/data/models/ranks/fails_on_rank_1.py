"""A model whose forward raises on torchrun's rank 1 only: one rank failing must fail the run with its reason,
name the rank, and stop the others (tests/core/test_ranks.py)."""
import os

import torch


class FailsOnRankOne(torch.nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, d_model)
        self.head = torch.nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if os.environ.get("RANK") == "1":
            raise ValueError("rank one's batch is cursed")
        return self.head(self.embed(tokens))
