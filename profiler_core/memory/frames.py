"""What one recorded stack says: the phase it belongs to, the telling user frame, the ATen ops, the
autograd node.

A snapshot recorded with `stacks="all"` mixes C++ frames (filename `??`, `*.cpp`, empty) and Python
frames (`*.py`), innermost first. Allocations made by PyTorch's autograd worker thread carry no Python
frame at all, only C++ ones such as `torch::autograd::Engine::thread_main` and
`torch::autograd::generated::SoftmaxBackward0::apply` — those two names are what identify backward.
Torch interns frame dicts, so the same frame objects recur across thousands of events; summaries are
cached per stack (tuple of frame ids) to keep a 100k-event trace fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OP_RE = re.compile(r"^at::_ops::(\w+)::(?:call|redispatch)\(")
_NODE_RE = re.compile(r"^torch::autograd::generated::(\w+)::apply\(")
# Paths of code that is not the user's: installed packages, the stdlib, frozen modules.
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "<frozen", "/lib/python3", "/torch/")
# Ops that only allocate or reshape: naming them would hide the op that asked for the memory.
_PLUMBING_OPS = {"empty_memory_format", "empty_strided", "empty", "resize_", "zeros", "view", "copy_"}


@dataclass(frozen=True, slots=True)
class StackSummary:
    phase_evidence: str | None  # "optimizer" | "backward" | "forward" | None (stack says nothing)
    user_frame: str | None  # "probe/holdout.py:29 in forward", innermost non-library Python frame
    user_function: str | None
    op: str | None  # innermost ATen op that is not plumbing, e.g. "_softmax"
    ops: frozenset[str]  # every at::_ops name on the stack (empty when C++ frames were not recorded)
    autograd_node: str | None  # e.g. "SoftmaxBackward0"
    optimizer_module: str | None  # e.g. "adam" from torch/optim/adam.py

    @property
    def telling_frame(self) -> str | None:
        """The user frame; for autograd-thread allocations, which have none, the backward node."""
        if self.user_frame:
            return self.user_frame
        return f"autograd {self.autograd_node}" if self.autograd_node else None


EMPTY_STACK = StackSummary(None, None, None, None, frozenset(), None, None)


def is_library_file(filename: str) -> bool:
    return any(marker in filename for marker in _LIBRARY_MARKERS)


def short_path(filename: str, parts: int = 2) -> str:
    return "/".join(filename.replace("\\", "/").split("/")[-parts:])


def _python_evidence(frames: list[dict]) -> tuple[str | None, str | None]:
    """Phase evidence and optimizer module from the Python frames alone."""
    evidence, optimizer = None, None
    for frame in frames:
        filename, name = frame.get("filename", ""), frame.get("name", "")
        if "/torch/optim/" in filename:
            return "optimizer", filename.rsplit("/", 1)[-1].removesuffix(".py")
        if "/torch/autograd/" in filename or (filename.endswith("torch/_tensor.py") and name == "backward"):
            evidence = "backward"
        elif evidence is None and (name == "forward" or "/torch/nn/" in filename):
            evidence = "forward"  # module forward, or a loss in torch.nn.functional
    return evidence, optimizer


def _cpp_facts(frames: list[dict]) -> tuple[list[str], str | None, bool]:
    """ATen ops (innermost first), innermost autograd node, and whether the autograd engine ran it."""
    ops: list[str] = []
    node, in_engine = None, False
    for frame in frames:
        name = frame.get("name", "")
        if not name.startswith(("at::_ops::", "torch::autograd::")):
            continue
        if match := _OP_RE.match(name):
            ops.append(match.group(1))
        elif node is None and (match := _NODE_RE.match(name)):
            node = match.group(1)
        elif name.startswith(("torch::autograd::Engine::", "torch::autograd::python::PythonEngine::")):
            in_engine = True
    return ops, node, in_engine


def _first_user_frame(frames: list[dict]) -> dict | None:
    for frame in frames:
        filename = frame.get("filename", "")
        if filename.endswith(".py") and not is_library_file(filename):
            return frame
    return None


def summarize_stack(frames: list[dict]) -> StackSummary:
    """Everything the analysis needs from one stack. Optimizer beats backward beats forward, because
    activation recomputation runs module forwards inside the autograd engine."""
    if not frames:
        return EMPTY_STACK
    evidence, optimizer = _python_evidence(frames)
    ops, node, in_engine = _cpp_facts(frames)
    if evidence != "optimizer" and (in_engine or node is not None):
        evidence = "backward"
    user = _first_user_frame(frames)
    user_text = f"{short_path(user['filename'])}:{user.get('line', 0)} in {user.get('name', '?')}" if user else None
    meaningful_op = next((op for op in ops if op not in _PLUMBING_OPS), ops[0] if ops else None)
    return StackSummary(
        phase_evidence=evidence,
        user_frame=user_text,
        user_function=user.get("name") if user else None,
        op=meaningful_op,
        ops=frozenset(ops),
        autograd_node=node,
        optimizer_module=optimizer,
    )


class StackCache:
    """Summaries keyed by the identity of the frame objects; valid while the snapshot is alive."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[int, ...], StackSummary] = {}

    def summary(self, frames: list[dict] | None) -> StackSummary:
        if not frames:
            return EMPTY_STACK
        key = tuple(map(id, frames))
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = summarize_stack(frames)
        return found
