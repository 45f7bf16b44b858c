"""NVTX ranges that cost nothing where CUDA is absent (CPU builds raise on torch.cuda.nvtx)."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def _cuda_range(name: str) -> Iterator[None]:
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


@functools.cache
def _cuda_present() -> bool:
    return torch.cuda.is_available()


def nvtx_range(name: str) -> contextlib.AbstractContextManager[None]:
    if _cuda_present():
        return _cuda_range(name)
    return contextlib.nullcontext()
