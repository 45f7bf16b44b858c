"""A model whose forward raises on torchrun's rank 2 at its ninth call (after 2 warmup and 6 measured steps): the
run fails, and the per-step straggler test still covers the steps every rank measured (tests/core/test_ranks.py)."""
import os

import torch


class FailsLateOnRankTwo(torch.nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, d_model)
        self.head = torch.nn.Linear(d_model, vocab_size)
        self.calls = 0

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if os.environ.get("RANK") == "2" and self.calls == 9:
            raise ValueError("rank two gave up")
        return self.head(self.embed(tokens))
