"""The transformer block of gpt.py, imported by it as a neighbour module. Its attention is nanoGPT's: one fused
qkv projection, then either the softmax written out (the scores materialized, masked by a causal buffer) or
F.scaled_dot_product_attention, picked by the `attention` switch."""
from __future__ import annotations

import contextlib
import math

import torch
from torch import nn
from torch.nn import functional as F

ATTENTIONS = ("naive", "sdpa")


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, attention: str = "sdpa"):
        super().__init__()
        assert n_embd % n_head == 0, f"n_embd {n_embd} is not a multiple of n_head {n_head}"
        assert attention in ATTENTIONS, f"attention must be one of {ATTENTIONS}; got {attention!r}"
        self.n_head, self.attention = n_head, attention
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        if attention == "naive":
            self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size, dtype=torch.bool)),
                                 persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))  # (B, H, T, hd)
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])  # (B, H, T, T)
            scores = scores.masked_fill(~self.bias[:t, :t], float("-inf"))
            y = F.softmax(scores, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))  # (B, T, C)


def nvtx_range(name: str) -> contextlib.AbstractContextManager:
    """The user's own NVTX range (docs/your-model.md, "Your own ranges"); a CPU-only build of torch has no NVTX."""
    return torch.cuda.nvtx.range(name) if torch.cuda.is_available() else contextlib.nullcontext()


class MLP(nn.Module):
    def __init__(self, n_embd: int):
        super().__init__()
        self.c_fc, self.gelu, self.c_proj = nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with nvtx_range("up projection and gelu"):  # shows as a sub-row of mlp with --nvtx-modules and nsys
            hidden = self.gelu(self.c_fc(x))
        return self.c_proj(hidden)


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, attention: str = "sdpa"):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, attention)
        self.mlp = MLP(n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))
