"""A model whose logits are NaN: it runs and times like any model, but its loss is NaN in every step (the user's
numbers are broken; the run must say so and keep its files strict JSON)."""
from torch import nn


class NanLogits(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        return self.head(self.wte(tokens)) * float("nan")


def build(vocab_size: int, d_model: int) -> nn.Module:
    return NanLogits(vocab_size, d_model)
