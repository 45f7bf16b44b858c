"""A model whose forward never returns (a user's deadlock, a data wait that never ends): a shared process's smoke
test must end it at its bound with a reason while the other arms go on (tests/core/test_shared_process.py)."""
import time

import torch


class WaitsForever(torch.nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, d_model)
        self.head = torch.nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        while True:  # slept in short naps: Python code runs between them, as in most hangs a user meets
            time.sleep(0.05)
