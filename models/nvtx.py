"""NVTX ranges that cost nothing where CUDA is absent (CPU builds raise on torch.cuda.nvtx)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def _cuda_range(name: str) -> Iterator[None]:
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def nvtx_range(name: str) -> contextlib.AbstractContextManager[None]:
    if torch.cuda.is_available():
        return _cuda_range(name)
    return contextlib.nullcontext()
