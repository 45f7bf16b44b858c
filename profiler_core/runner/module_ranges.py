"""Per-module ranges for the capture passes (`--nvtx-modules DEPTH`; runner side, imports torch).

Every module down to DEPTH gets a range named by models.phases.module_range in forward and in backward, so the
kernel table can be grouped by module type, and in the memory pass its allocations carry the same text as
allocator metadata. Never installed in the clean timing pass: the hooks cost host time and add autograd nodes.

- Forward runs on the main thread: the pre-hook pushes, the post-hook (always called, also when forward raises)
  pops, so the NVTX stack stays balanced.
- Backward runs on the autograd thread, where PyTorch's full backward hooks fire. They open and close start/end
  ranges keyed by module: an unbalanced pair cannot corrupt a push/pop stack, and whatever is still open when the
  step ends is closed then.
- A module none of whose inputs needs a gradient (an embedding of token ids) gets its "backward" hook at once, before
  its own backward kernels; its range stays open until its parameters' gradients are accumulated instead.
- Allocator metadata is one global string, not per thread: a list of open tags restores the parent's on exit.
  Forward and backward never overlap in time (the main thread waits in `loss.backward()`), so one list serves both.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from sysprof.models.phases import module_range, parse_module_range
from sysprof.profiler_core.base.module_types import category_of, module_category, module_depth

# PyTorch warns each time the hook of a module without grad-requiring inputs fires early; that case is handled.
_EARLY_HOOK_WARNING = "Full backward hook is firing when gradients are computed with respect to module outputs"
# The error autograd raises when a module's hooked input or output is changed in place.
_IN_PLACE_MARKER = "of BackwardHookFunction"


class RangeCalls(Protocol):
    """Where the ranges and tags go: NVTX and the CUDA allocator, or a recorder in tests."""

    def push(self, name: str) -> None: ...
    def pop(self) -> None: ...
    def start(self, name: str) -> Any: ...
    def end(self, handle: Any) -> None: ...
    def tag(self, text: str) -> None: ...


class CudaRangeCalls:
    """NVTX ranges (what nsys records), mirrored as record_function ranges while torch.profiler records, and
    allocator metadata in the memory pass."""

    def __init__(self, mirror: bool, tag_memory: bool):
        self.mirror, self.tag_memory = mirror, tag_memory and tags_supported()
        self.mirrored: list[Any] = []  # record_function handles of the pushed ranges, innermost last

    def push(self, name: str) -> None:
        torch.cuda.nvtx.range_push(name)
        if self.mirror:
            self.mirrored.append(torch.ops.profiler._record_function_enter_new(name, None))

    def pop(self) -> None:
        torch.cuda.nvtx.range_pop()
        if self.mirrored:
            torch.ops.profiler._record_function_exit(self.mirrored.pop())

    def start(self, name: str) -> Any:
        record = torch.ops.profiler._record_function_enter_new(name, None) if self.mirror else None
        return torch.cuda.nvtx.range_start(name), record

    def end(self, handle: Any) -> None:
        nvtx_id, record = handle
        torch.cuda.nvtx.range_end(nvtx_id)
        if record is not None:
            torch.ops.profiler._record_function_exit(record)

    def tag(self, text: str) -> None:
        if self.tag_memory:
            torch.cuda.memory._set_memory_metadata(text)


def tags_supported() -> bool:
    return hasattr(torch.cuda.memory, "_set_memory_metadata")


def hooked_modules(model: nn.Module, depth: int) -> list[tuple[str, nn.Module]]:
    """(path, module) for every module from depth 1 to `depth`; the root's range would be the forward phase's."""
    return [(path, module) for path, module in model.named_modules() if 0 < module_depth(path) <= depth]


@dataclass(eq=False)  # entries are told apart by identity: two may hold equal fields
class _Pending:
    """A backward range waiting for its module's parameter gradients (see the module docstring)."""
    module: nn.Module
    handle: Any
    remaining: int


@dataclass(eq=False)
class ModuleRanges:
    """The hooks of one model and what they left open; the runner calls end_step() after every step."""

    calls: RangeCalls
    tagging: bool = False
    names: dict[nn.Module, str] = field(default_factory=dict)
    open_backward: dict[nn.Module, list[Any]] = field(default_factory=dict)
    grad_params: dict[nn.Module, int] = field(default_factory=dict)  # parameters that get a gradient, per module
    pending: list[_Pending] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    pushed: int = 0
    last_entered: str | None = None  # the module whose forward began last: where an in-place failure happened
    handles: list[Any] = field(default_factory=list)

    def install(self, model: nn.Module, depth: int) -> ModuleRanges:
        warnings.filterwarnings("ignore", message=_EARLY_HOOK_WARNING)
        for path, module in hooked_modules(model, depth):
            self.names[module] = module_range(path, type(module).__name__)
            self.handles += [module.register_forward_pre_hook(self.forward_pre),
                             module.register_forward_hook(self.forward_post, always_call=True),
                             module.register_full_backward_pre_hook(self.backward_pre),
                             module.register_full_backward_hook(self.backward_post)]
        owners: dict[nn.Parameter, list[nn.Module]] = {}
        for module in self.names:
            trained = [p for p in module.parameters() if p.requires_grad]
            self.grad_params[module] = len(trained)
            for parameter in trained:
                owners.setdefault(parameter, []).append(module)
        for parameter, modules in owners.items():
            self.handles.append(parameter.register_post_accumulate_grad_hook(self._accumulated(modules)))
        return self

    def remove(self) -> None:
        self.end_step()
        for handle in self.handles:
            handle.remove()
        self.handles, self.names, self.grad_params = [], {}, {}

    def forward_pre(self, module: nn.Module, _args: Any) -> None:
        name = self.names[module]
        self.calls.push(name)
        self.pushed += 1
        self.last_entered = name
        self._open_tag(name)

    def forward_post(self, module: nn.Module, _args: Any, _output: Any) -> None:
        if self.pushed:
            self.calls.pop()
            self.pushed -= 1
        self._close_tag(self.names[module])

    def backward_pre(self, module: nn.Module, _grad_output: Any) -> None:
        name = self.names[module]
        self.open_backward.setdefault(module, []).append(self.calls.start(name))
        self._open_tag(name)

    def backward_post(self, module: nn.Module, grad_input: tuple, _grad_output: Any) -> None:
        handles = self.open_backward.get(module)
        if not handles:
            return
        handle = handles.pop()
        waiting = self.grad_params[module]
        if waiting and all(grad is None for grad in grad_input):  # fired early: its own backward is still to run
            self.pending.append(_Pending(module, handle, waiting))
            return
        self._close(module, handle)

    def _accumulated(self, modules: list[nn.Module]):
        def hook(_parameter: torch.Tensor) -> None:
            for entry in [e for e in self.pending if e.module in modules]:
                entry.remaining -= 1
                if entry.remaining == 0:
                    self.pending.remove(entry)
                    self._close(entry.module, entry.handle)
        return hook

    def _close(self, module: nn.Module, handle: Any) -> None:
        self.calls.end(handle)
        self._close_tag(self.names[module])

    def end_step(self) -> None:
        """Close what the step left open: backward ranges whose hook never fired, pushes of a failed forward."""
        for module, handles in self.open_backward.items():
            for handle in reversed(handles):
                self._close(module, handle)
        for entry in self.pending:
            self._close(entry.module, entry.handle)
        self.open_backward, self.pending = {}, []
        for _ in range(self.pushed):
            self.calls.pop()
        self.pushed = 0
        if self.tagging:
            self.tags = []
            self.calls.tag("")

    def _open_tag(self, name: str) -> None:
        if self.tagging:
            self.tags.append(name)
            self.calls.tag(name)

    def _close_tag(self, name: str) -> None:
        if not self.tagging or name not in self.tags:
            return
        del self.tags[len(self.tags) - 1 - self.tags[::-1].index(name)]  # the innermost one of that name
        self.calls.tag(self.tags[-1] if self.tags else "")

    def explain(self, exc: BaseException) -> str | None:
        """A one-line reason when the hooks made the step fail, else None."""
        if _IN_PLACE_MARKER not in str(exc):
            return None
        module = parse_module_range(self.last_entered or "")
        where = f" at {module[0]} ({module[1]})" if module else ""
        return (f"--nvtx-modules: a module's input or output is changed in place{where}, which PyTorch's module "
                "backward hooks cannot wrap; use a smaller --nvtx-modules depth, or leave it off")


def describe_modules(model: nn.Module, depth: int) -> dict[str, dict]:
    """modules.json: path → class, category and parameter count, for every hooked module."""
    hooked = hooked_modules(model, depth)
    types = {path: type(module).__name__ for path, module in hooked}
    return {path: {"type": types[path], "own_category": category_of(path, types[path]),
                   "category": module_category(path, types),
                   "params": sum(p.numel() for p in module.parameters())} for path, module in hooked}


def install_module_ranges(model: nn.Module, depth: int, capture: str,
                          calls: RangeCalls | None = None) -> ModuleRanges | None:
    """The hooks for this pass, or None: off (depth 0), the clean timing pass, or no CUDA to record them."""
    if depth <= 0 or capture == "none":
        return None
    if calls is None:
        if not torch.cuda.is_available():
            return None
        calls = CudaRangeCalls(mirror=capture == "torch", tag_memory=capture == "memory")
    return ModuleRanges(calls, tagging=capture == "memory").install(model, depth)
