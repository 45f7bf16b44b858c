"""A GPT-2-style model in another style than the built-in one: its own config object, learned positions,
GELU MLP, tied head, nanoGPT's attention switch (softmax written out, or scaled_dot_product_attention), and an
output object with `.logits` (as Hugging Face models return). The factory `build` takes nanoGPT's parameter
names; sysprof fills them from its dims and its --attention choice (--model-factory FILE:build)."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from blocks import Block  # a neighbour module: the file's folder is on sys.path


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0
    attention: str = "sdpa"  # "naive": the scores materialized; "sdpa": F.scaled_dot_product_attention


@dataclass
class Output:
    logits: torch.Tensor


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList(Block(config.n_embd, config.n_head, config.block_size, config.attention)
                                    for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, idx: torch.Tensor) -> Output:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return Output(self.head(self.ln_f(x)))


def build(vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int, dropout: float = 0.0,
          attention: str = "sdpa") -> GPT:
    return GPT(GPTConfig(vocab_size, block_size, n_layer, n_head, n_embd, dropout, attention))


def broken(vocab_size: int, n_embd: int) -> nn.Module:
    """For tests: a model whose forward raises (the user's bug, kept with its traceback in the run directory)."""
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, n_embd)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            raise ValueError("shapes do not line up in Broken.forward")
    return Broken()


def in_place(vocab_size: int, n_embd: int) -> nn.Module:
    """For tests: a model whose ReLU changes the previous module's output in place, which PyTorch's full backward
    hooks (--nvtx-modules) refuse."""
    return nn.Sequential(nn.Embedding(vocab_size, n_embd), nn.Linear(n_embd, n_embd), nn.ReLU(inplace=True),
                         nn.Linear(n_embd, vocab_size))


def needs_more(vocab_size: int, n_embd: int, n_experts: int) -> nn.Module:
    """For tests: a parameter sysprof cannot fill from its dims."""
    return nn.Linear(n_embd, vocab_size)


def not_a_module(vocab_size: int) -> dict:
    return {"vocab_size": vocab_size}


def token_loss(output: Output, targets: torch.Tensor) -> torch.Tensor:
    """For --loss: the model's own loss from its output object (here: cross-entropy, flattened its own way)."""
    logits = output.logits
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class PlainSGD(torch.optim.Optimizer):
    """For --optimizer: a student's own optimizer (SGD without momentum), with its own learning-rate argument."""

    def __init__(self, params, lr: float = 1e-3):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
