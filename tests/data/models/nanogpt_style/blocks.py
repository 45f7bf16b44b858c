"""The transformer block of gpt.py, imported by it as a neighbour module."""
from __future__ import annotations

import contextlib

import torch
from torch import nn


def nvtx_range(name: str) -> contextlib.AbstractContextManager:
    """The user's own NVTX range (README, "Your own ranges"); a CPU-only build of torch has no NVTX to call."""
    return torch.cuda.nvtx.range(name) if torch.cuda.is_available() else contextlib.nullcontext()


class MLP(nn.Module):
    def __init__(self, n_embd: int):
        super().__init__()
        self.fc, self.act, self.proj = nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with nvtx_range("up projection and gelu"):  # shows as a sub-row of mlp with --nvtx-modules and nsys
            hidden = self.act(self.fc(x))
        return self.proj(hidden)


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.mlp = MLP(n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))
