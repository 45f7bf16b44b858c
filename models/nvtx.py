"""NVTX ranges that cost nothing where CUDA is absent (CPU builds raise on torch.cuda.nvtx).

While torch.profiler records, the same names are also emitted as record_function ranges, so the
fallback profiler sees the phases that nsys sees through NVTX.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

_mirror_to_torch_profiler = False


def mirror_to_torch_profiler(enabled: bool) -> None:
    global _mirror_to_torch_profiler
    _mirror_to_torch_profiler = enabled


@functools.cache
def _cuda_present() -> bool:
    return torch.cuda.is_available()


@contextlib.contextmanager
def _cuda_range(name: str) -> Iterator[None]:
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


@contextlib.contextmanager
def _mirrored_range(name: str) -> Iterator[None]:
    with _cuda_range(name), torch.profiler.record_function(name):
        yield


def nvtx_range(name: str) -> contextlib.AbstractContextManager[None]:
    # Under torch.compile a range push would split the graph; compiled code is fused anyway.
    if not _cuda_present() or torch.compiler.is_compiling():
        return contextlib.nullcontext()
    return _mirrored_range(name) if _mirror_to_torch_profiler else _cuda_range(name)
