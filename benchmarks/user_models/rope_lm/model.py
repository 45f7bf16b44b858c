"""A CS336-style Transformer language model, every layer written by hand.

Pre-norm blocks: RMSNorm, multi-head causal self-attention with rotary position embeddings on q and k (the softmax
of masked scores, written out), RMSNorm, SwiGLU feed-forward. Linear layers carry no bias and are initialized with
truncated normals as in CS336 assignment 1. The factory `build` takes the tool's dimension names; at d_model 768,
12 layers, 12 heads, d_ff 3072 and a vocabulary of 10000 it has 128,625,408 parameters (untied embeddings).
"""
from __future__ import annotations

import math

import torch
from einops import einsum, rearrange
from torch import nn


def _trunc_normal(*shape: int, std: float) -> nn.Parameter:
    return nn.Parameter(nn.init.trunc_normal_(torch.empty(*shape), std=std, a=-3 * std, b=3 * std))


class Linear(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.weight = _trunc_normal(d_out, d_in, std=math.sqrt(2 / (d_in + d_out)))  # (d_out, d_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return einsum(x, self.weight, "... d_in, d_out d_in -> ... d_out")


class Embedding(nn.Module):
    def __init__(self, num_embeddings: int, d_model: int):
        super().__init__()
        self.weight = _trunc_normal(num_embeddings, d_model, std=1.0)  # (V, d)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.weight[token_ids]  # (B, T) -> (B, T, d)


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()  # the mean of squares in fp32, whatever the input
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return (x / rms * self.weight).to(dtype)


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1, self.w2, self.w3 = Linear(d_model, d_ff), Linear(d_ff, d_model), Linear(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.w1(x)  # (..., d_ff)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


class RotaryEmbedding(nn.Module):
    """Rotates each pair of q/k features (2i, 2i+1) by the angle position * theta^(-2i / d_head)."""

    def __init__(self, d_head: int, context_length: int, theta: float = 10_000.0):
        super().__init__()
        inv_freq = theta ** (-torch.arange(0, d_head, 2).float() / d_head)  # (d_head/2,)
        angles = einsum(torch.arange(context_length).float(), inv_freq, "t, f -> t f")  # (T_max, d_head/2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        cos, sin = self.cos[positions], self.sin[positions]  # (T, d_head/2)
        pairs = rearrange(x, "... t (f two) -> ... t f two", two=2)
        x1, x2 = pairs[..., 0], pairs[..., 1]  # (..., T, d_head/2)
        rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        return rearrange(rotated, "... t f two -> ... t (f two)").to(x.dtype)


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    shifted = x - x.amax(dim=dim, keepdim=True)  # no overflow in exp
    exp = shifted.exp()
    return exp / exp.sum(dim=dim, keepdim=True)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_head)) v over the positions at or before each query; q, k, v: (B, H, T, d_head)."""
    scores = einsum(q, k, "b h q d, b h k d -> b h q k") / math.sqrt(q.shape[-1])  # (B, H, T, T)
    t = q.shape[-2]
    future = torch.triu(torch.ones(t, t, dtype=torch.bool, device=q.device), diagonal=1)  # (T, T)
    weights = softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return einsum(weights, v, "b h q k, b h k d -> b h q d")


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, rope: RotaryEmbedding):
        super().__init__()
        assert d_model % num_heads == 0, f"d_model {d_model} is not a multiple of num_heads {num_heads}"
        self.num_heads, self.rope = num_heads, rope
        self.q_proj, self.k_proj = Linear(d_model, d_model), Linear(d_model, d_model)
        self.v_proj, self.output_proj = Linear(d_model, d_model), Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        heads = [rearrange(proj(x), "b t (h d) -> b h t d", h=self.num_heads)
                 for proj in (self.q_proj, self.k_proj, self.v_proj)]  # each (B, H, T, d_head)
        positions = torch.arange(x.shape[-2], device=x.device)
        q, k, v = self.rope(heads[0], positions), self.rope(heads[1], positions), heads[2]
        return self.output_proj(rearrange(causal_attention(q, k, v), "b h t d -> b t (h d)"))


class TransformerBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, rope: RotaryEmbedding):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(d_model), RMSNorm(d_model)
        self.attn = MultiHeadSelfAttention(d_model, num_heads, rope)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, vocab_size: int, context_length: int, d_model: int, num_layers: int, num_heads: int,
                 d_ff: int, rope_theta: float = 10_000.0, tie_embeddings: bool = False):
        super().__init__()
        rope = RotaryEmbedding(d_model // num_heads, context_length, rope_theta)  # shared by every block
        self.token_embeddings = Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(TransformerBlock(d_model, num_heads, d_ff, rope) for _ in range(num_layers))
        self.ln_final = RMSNorm(d_model)
        self.lm_head = Linear(d_model, vocab_size)
        if tie_embeddings:
            self.lm_head.weight = self.token_embeddings.weight  # both (V, d)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        x = self.token_embeddings(token_ids)  # (B, T, d)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))  # (B, T, V)


def build(vocab_size: int = 10_000, context_length: int = 256, d_model: int = 768, num_layers: int = 12,
          num_heads: int = 12, d_ff: int = 3072, rope_theta: float = 10_000.0,
          tie_embeddings: bool = False) -> TransformerLM:
    """The factory for `--model-factory rope_lm/model.py:build`: the tool fills every dimension by name."""
    return TransformerLM(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta,
                         tie_embeddings)
