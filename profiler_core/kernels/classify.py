"""Kernel classes from kernel names: one ordered table of regex rules.

The first matching rule wins, so order encodes precedence: a flash-attention
kernel mentions `softmax`, a PyTorch copy runs inside `elementwise_kernel`, an
optimizer's `multi_tensor_apply_kernel` holds `Functor`s.

Classes: gemm, attention, softmax, norm_reduce, elementwise, optimizer, copy,
nccl, other.  `norm_reduce` is normalization *and* plain reductions (sum, mean,
loss reductions): by kernel name alone a LayerNorm/RMSNorm reduction and a sum
are the same kind of memory-bound pass, so they share a class.
"""

from __future__ import annotations

import re

import pandas as pd

KERNEL_CLASSES = (
    "gemm", "attention", "softmax", "norm_reduce", "elementwise", "optimizer", "copy", "nccl", "other",
)

_RULES: tuple[tuple[str, str], ...] = (
    (r"nccl", "nccl"),
    (r"flash|fmha|attention|attn|sdpa|xformers", "attention"),
    (r"softmax", "softmax"),
    # `adam(?!ard)`: Adam kernels, not a Hadamard transform.
    (r"multi_tensor_apply|adam(?!ard)|lamb_|sgd_kernel|optimizer", "optimizer"),
    # cuBLAS (sm80_xmma_gemm, ampere_sgemm, nvjet on Hopper/Blackwell), CUTLASS,
    # and cuBLASLt's split-K reduction, which is part of a GEMM.
    (r"gemm|gemv|xmma|cutlass|cublas|nvjet|matmul|s16816|s1688|wgmma", "gemm"),
    (r"memcpy|memset|copy|transpose|\[CUDA mem", "copy"),
    (r"layer_?norm|rms_?norm|batch_?norm|group_?norm|instance_?norm|norm_kernel|welford|reduce", "norm_reduce"),
    (r"elementwise|vectorized|unrolled|pointwise|functor|fill|triu|tril|where|gather|scatter|index"
     r"|embedding|arange|silu|gelu|relu|dropout|distribution|cat_?array|cast|_bf16$|_f32$", "elementwise"),
)
_COMPILED_RULES = tuple((re.compile(pattern, re.IGNORECASE), label) for pattern, label in _RULES)


def classify_kernel(name: str) -> str:
    """The class of one kernel name (`other` when no rule matches)."""
    for pattern, label in _COMPILED_RULES:
        if pattern.search(name):
            return label
    return "other"


def classify_kernels(names: pd.Series) -> pd.Series:
    """`classify_kernel` over a Series; each distinct name is matched once."""
    distinct = pd.unique(names.astype(str))
    labels = {name: classify_kernel(name) for name in distinct}
    return names.astype(str).map(labels).rename("class")
