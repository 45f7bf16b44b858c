"""Kernel names as a table can show them: the base name, as nsys reports a kernel's shortName.

A demangled CUDA kernel name runs to hundreds of characters of template arguments and parameter lists
(`void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, …>(int, …)`). Tables show
the base name (`vectorized_elementwise_kernel`); the full name stays in the data (exports, --full-names, the
app's detail line). One exception, because its base name says nothing: CUTLASS's device-kernel wrapper
(`cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_…>`) is named by its template argument, the GEMM it runs.
"""
from __future__ import annotations

import re

OPENING, CLOSING = "<([", ">)]"
_GENERIC_WRAPPER = re.compile(r"Kernel\d*")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def short_kernel_name(name: str) -> str:
    """The base name: no return type, namespaces, template arguments or parameter list."""
    outside, first_argument = _split_brackets(name)
    base = outside.strip().split(" ")[-1].split("::")[-1] if outside.strip() else ""
    if _GENERIC_WRAPPER.fullmatch(base) and first_argument and _IDENTIFIER.fullmatch(first_argument):
        return first_argument
    return base or name  # a name that is all brackets: nothing shorter to say


def _split_brackets(name: str) -> tuple[str, str]:
    """(the characters outside any bracket, the first template argument at depth 1)."""
    outside, first, depth, in_first, done_first = [], [], 0, False, False
    for char in name:
        if char in OPENING:
            depth += 1
            if depth == 1 and char == "<" and not done_first:
                in_first = True
                continue
        elif char in CLOSING and depth:
            depth -= 1
            if depth == 0 and in_first:
                in_first, done_first = False, True
            continue
        if depth == 0:
            outside.append(char)
        elif in_first:
            if depth == 1 and char == ",":
                in_first, done_first = False, True
            else:
                first.append(char)
    return "".join(outside), "".join(first).strip()
