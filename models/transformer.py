"""The CS336 Assignment 1 Transformer LM: pre-norm, RMSNorm, SwiGLU, RoPE, causal MHA, untied head."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import einsum, rearrange
from torch import nn

from sysprof.models.nvtx import nvtx_range
from sysprof.models.phases import ATTENTION_MASK, ATTENTION_OUTPUT, ATTENTION_RANGE, ATTENTION_SCORES, ATTENTION_SOFTMAX
from sysprof.models.presets import ModelSpec

ATTENTION_KINDS = ("naive", "sdpa")


def _trunc_normal(shape: tuple[int, ...], std: float) -> nn.Parameter:
    weight = torch.empty(shape)
    nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-3 * std, b=3 * std)
    return nn.Parameter(weight)


class Linear(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.weight = _trunc_normal((d_out, d_in), std=math.sqrt(2.0 / (d_in + d_out)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # F.linear, not einsum: the same GEMM with far less host time per call, which a launch-bound
        # step (small models, bf16) pays 84 times per forward.
        return F.linear(x, self.weight)  # (..., d_in) -> (..., d_out)


class Embedding(nn.Module):
    def __init__(self, vocab: int, d_model: int):
        super().__init__()
        self.weight = _trunc_normal((vocab, d_model), std=1.0)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.weight[token_ids]


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The mean of squares overflows/underflows in half precision, so normalize in fp32 and cast back.
        x32 = x.float()
        rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x32 * rms * self.weight).to(x.dtype)


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1, self.w2, self.w3 = Linear(d_model, d_ff), Linear(d_ff, d_model), Linear(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class RotaryEmbedding(nn.Module):
    cos: torch.Tensor  # buffers registered in __init__
    sin: torch.Tensor

    def __init__(self, d_head: int, max_seq_len: int, theta: float = 10_000.0):
        super().__init__()
        # The tables are computed on the CPU and moved to the default device: on the meta device (inspect)
        # torch.arange goes through a Python decomposition that imports torch._dynamo, seconds for a few floats.
        cpu = torch.device("cpu")
        inv_freq = theta ** (-torch.arange(0, d_head, 2, dtype=torch.float32, device=cpu) / d_head)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float32, device=cpu), inv_freq)  # (T_max, d_head/2)
        # Buffers, not parameters, and not saved: they are derived from the shape.
        target = torch.get_default_device()
        self.register_buffer("cos", angles.cos().to(target), persistent=False)
        self.register_buffer("sin", angles.sin().to(target), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Rotate (..., T, d_head) by positions 0..T-1; slicing the tables is a view, not a gather kernel."""
        seq_len = x.shape[-2]
        pairs = rearrange(x, "... (half two) -> ... half two", two=2)
        even, odd = pairs[..., 0], pairs[..., 1]
        cos, sin = self.cos[:seq_len].to(x.dtype), self.sin[:seq_len].to(x.dtype)  # (T, d_head/2)
        rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return rearrange(rotated, "... half two -> ... (half two)")


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Materializes the (T, T) scores; the NVTX sub-ranges are the ones the CS336 reports time."""
    with nvtx_range(ATTENTION_RANGE):
        seq_len = q.shape[-2]
        with nvtx_range(ATTENTION_SCORES):
            scores = einsum(q, k, "... q d, ... k d -> ... q k")
        with nvtx_range(ATTENTION_MASK):
            scores = scores / math.sqrt(q.shape[-1])
            causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device).tril()
            scores = scores.masked_fill(~causal, float("-inf"))
        with nvtx_range(ATTENTION_SOFTMAX):
            probs = torch.softmax(scores, dim=-1)
        with nvtx_range(ATTENTION_OUTPUT):
            return einsum(probs, v, "... q k, ... k d -> ... q d")


def sdpa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    with nvtx_range(ATTENTION_RANGE):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, heads: int, rope: RotaryEmbedding, attention: str):
        super().__init__()
        self.heads, self.rope = heads, rope
        self.attend = naive_attention if attention == "naive" else sdpa_attention
        self.q_proj, self.k_proj = Linear(d_model, d_model), Linear(d_model, d_model)
        self.v_proj, self.output_proj = Linear(d_model, d_model), Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        split = "b t (h d) -> b h t d"
        q = rearrange(self.q_proj(x), split, h=self.heads)  # (B, H, T, d_head)
        k = rearrange(self.k_proj(x), split, h=self.heads)
        v = rearrange(self.v_proj(x), split, h=self.heads)
        out = self.attend(self.rope(q), self.rope(k), v)
        return self.output_proj(rearrange(out, "b h t d -> b t (h d)"))


class TransformerBlock(nn.Module):
    def __init__(self, spec: ModelSpec, rope: RotaryEmbedding, attention: str):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(spec.d_model), RMSNorm(spec.d_model)
        self.attn = CausalSelfAttention(spec.d_model, spec.heads, rope, attention)
        self.ffn = SwiGLU(spec.d_model, spec.d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, spec: ModelSpec, context_length: int, attention: str = "naive"):
        super().__init__()
        if attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, not {attention!r}")
        self.context_length = context_length
        rope = RotaryEmbedding(spec.d_head, context_length)
        self.token_embeddings = Embedding(spec.vocab, spec.d_model)
        self.layers = nn.ModuleList(TransformerBlock(spec, rope, attention) for _ in range(spec.layers))
        self.ln_final = RMSNorm(spec.d_model)
        self.lm_head = Linear(spec.d_model, spec.vocab)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        x = self.token_embeddings(token_ids)  # (B, T, d_model)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))  # (B, T, vocab)
