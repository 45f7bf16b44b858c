"""One rules table that puts every allocation in exactly one category, so categories add up to the total.

Rules are tried in order; the first that applies wins. They read the allocation's lifetime (phase it was
allocated and freed in, from replay/phases) and its stack (frames.StackSummary).

Two facts of real snapshots shape the table (both seen on the H200 fixture):

- Recording starts after warm-up, so parameters *and* AdamW state were allocated before recording and
  carry no stack. They cannot be told apart block by block; they are split by count instead: an
  optimizer keeping k state tensors per parameter (AdamW: exp_avg, exp_avg_sq → k = 2) leaves, for
  every parameter shape, 1 + k blocks of that exact size. Per requested size, n // (1 + k) blocks
  become parameters, k times that optimizer state, the remainder `other` (on the fixture: two 32 MiB
  cuBLAS workspaces — one per thread that ran a GEMM, main and autograd — and two 8 KiB blocks). Which
  block of a size class is called a parameter is arbitrary; only the totals mean something.
- `B·H·T²·4` equals `B·T·d_ff·4` whenever H·T = d_ff (CS336 small at T=256: 12·256 = 3072), so size
  alone cannot find attention scores: a T²-sized block counts as attention scores only when the op
  that made it is a score op (bmm, scale div, mask where/masked_fill, softmax, or their autograd
  nodes). The T² sizes are learned from what the softmax ops allocated (or given as a shape hint).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .replay import Allocation, Replay

CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "attention_scores", "temporaries", "other")
PERSISTENT = "persistent_before_recording"  # resolved into parameters / optimizer_state / other by count

# State tensors per parameter, by torch/optim module (SGD: momentum_buffer, assumed on).
STATES_PER_PARAMETER = {"adam": 2, "adamw": 2, "nadam": 2, "radam": 2, "adamax": 2,
                        "sgd": 1, "adagrad": 1, "rmsprop": 1}
SOFTMAX_OPS = {"_softmax", "softmax_int", "softmax", "_masked_softmax"}
ATTENTION_OPS = SOFTMAX_OPS | {
    "bmm", "baddbmm", "_softmax_backward_data", "_masked_softmax_backward", "div_Tensor", "div_Scalar",
    "where_self", "where_ScalarOther", "where_ScalarSelf", "where_Scalar",
    "masked_fill_Scalar", "masked_fill_Tensor", "masked_fill__Scalar", "masked_fill__Tensor",
}
ATTENTION_NODES = {"SoftmaxBackward0", "BmmBackward0", "BaddbmmBackward0", "DivBackward0", "WhereBackward0",
                   "MaskedFillBackward0", "MaskedSoftmaxBackward0"}


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    why: str
    applies: Callable[[Allocation, frozenset], bool]


def looks_like_attention_scores(alloc: Allocation, t2_sizes: frozenset) -> bool:
    if alloc.size not in t2_sizes or alloc.from_baseline:
        return False
    stack = alloc.stack
    if stack.ops or stack.autograd_node:  # C++ frames recorded: the op decides
        return bool(stack.ops & ATTENTION_OPS) or stack.autograd_node in ATTENTION_NODES
    return True  # Python-only stacks: the T² size is the only evidence left


RULES = (
    Rule("alive since before recording", PERSISTENT,
         "allocated before recording and never freed: parameters, optimizer state, workspaces (split by count)",
         lambda a, _: a.from_baseline and a.free_index is None),
    Rule("previous step's gradient", "gradients", "allocated before recording, released by the optimizer (zero_grad)",
         lambda a, _: a.from_baseline and a.free_phase == "optimizer"),
    Rule("activation saved before recording", "activations", "allocated before recording, released in backward",
         lambda a, _: a.from_baseline and a.free_phase == "backward"),
    Rule("attention scores", "attention_scores", "T²-sized and made by a score op (matmul, scale, mask, softmax)",
         looks_like_attention_scores),
    Rule("gradient", "gradients", "allocated in backward and outlives it (kept for the optimizer until zero_grad)",
         lambda a, _: a.alloc_phase == "backward" and a.free_phase != "backward"),
    Rule("optimizer state", "optimizer_state", "allocated in the optimizer step and never freed (lazy state init)",
         lambda a, _: a.alloc_phase == "optimizer" and a.free_index is None),
    Rule("saved activation", "activations", "allocated in forward, freed in backward: saved for backward",
         lambda a, _: a.alloc_phase == "forward" and a.free_phase == "backward"),
    Rule("temporary", "temporaries", "allocated and freed within one phase of one step",
         lambda a, _: a.free_index is not None and a.alloc_phase == a.free_phase and a.alloc_step == a.free_step),
    Rule("anything else", "other", "no rule matched (e.g. loss/logits kept by a Python reference across phases)",
         lambda a, _: True),
)


def attention_sizes(allocations: list[Allocation], hinted: set[int] | None = None) -> frozenset:
    """Sizes of T²-shaped tensors: whatever a softmax op allocated in forward, plus hinted sizes."""
    found = {a.size for a in allocations if a.alloc_phase == "forward" and a.stack.ops & SOFTMAX_OPS}
    return frozenset(found | set(hinted or ()))


def states_per_parameter(allocations: list[Allocation]) -> tuple[int, str | None]:
    """(k, optimizer module) from the optimizer frames in the trace; (0, None) when none ran."""
    for alloc in allocations:
        module = alloc.stack.optimizer_module or alloc.free_stack.optimizer_module
        if module:
            return STATES_PER_PARAMETER.get(module, 2), module
    return 0, None


def split_persistent(allocations: list[Allocation], states_per_param: int) -> list[str]:
    """Category per persistent block: per requested size n // (1+k) parameters, k× that state, rest other."""
    by_size: dict[int, list[int]] = defaultdict(list)
    for position, alloc in enumerate(allocations):
        by_size[alloc.size].append(position)
    categories = ["other"] * len(allocations)
    for positions in by_size.values():
        positions.sort(key=lambda p: allocations[p].address)
        n_params = len(positions) // (1 + states_per_param)
        for rank, position in enumerate(positions[: n_params * (1 + states_per_param)]):
            categories[position] = "parameters" if rank < n_params else "optimizer_state"
    return categories


def classify_allocations(replay: Replay, hinted_t2_sizes: set[int] | None = None) -> tuple[list[str], dict]:
    """Category for every replay.allocations entry, and facts about how the table was applied."""
    t2_sizes = attention_sizes(replay.allocations, hinted_t2_sizes)
    categories = [next(r.category for r in RULES if r.applies(a, t2_sizes)) for a in replay.allocations]
    k, optimizer = states_per_parameter(replay.allocations)
    if "optimizer_state" in categories:
        k = 0  # the state was created inside the recording: the persistent blocks hold none of it
    persistent = [i for i, category in enumerate(categories) if category == PERSISTENT]
    for i, category in zip(persistent, split_persistent([replay.allocations[i] for i in persistent], k)):
        categories[i] = category
    facts = {"attention_score_sizes": sorted(t2_sizes), "optimizer": optimizer, "states_per_parameter": k}
    return categories, facts


def bytes_by_category(allocations: list[Allocation], categories: list[str],
                      names: tuple[str, ...] = CATEGORIES) -> dict[str, int]:
    """Bytes per category name (any labelling: these categories, or module types)."""
    totals = dict.fromkeys(names, 0)
    for alloc, category in zip(allocations, categories):
        totals[category] += alloc.size
    return totals


def max_by_category(replay: Replay, categories: list[str], names: tuple[str, ...] = CATEGORIES) -> dict[str, int]:
    """Highest bytes each category reached at any point of the trace (each at its own moment)."""
    n_events = len(replay.levels)
    result = {}
    for category in names:
        members = [a for a, c in zip(replay.allocations, categories) if c == category]
        initial = sum(a.size for a in members if a.from_baseline)
        deltas = np.zeros(n_events + 1, dtype=np.int64)
        for alloc in members:
            if not alloc.from_baseline:
                deltas[alloc.alloc_index] += alloc.size
            if alloc.free_index is not None:
                deltas[alloc.free_index] -= alloc.size
        level = initial + np.cumsum(deltas[:n_events])
        result[category] = int(max(initial, level.max())) if n_events else initial
    return result
